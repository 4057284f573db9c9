// esbuild bundles the imported stylesheet into main.css beside main.js.
declare module '*.css';
