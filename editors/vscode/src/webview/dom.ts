// A tiny element builder: text goes in as text nodes, never as HTML.

type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attributes: Record<string, string | boolean | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes)) {
    if (value === true) {
      element.setAttribute(name, '');
    } else if (typeof value === 'string') {
      element.setAttribute(name, value);
    }
  }
  for (const child of children) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    element.append(typeof child === 'string' ? document.createTextNode(child) : child);
  }
  return element;
}

const SVG = 'http://www.w3.org/2000/svg';

/** A 16px icon from path data (drawn with currentColor). */
export function icon(paths: string[], className = 'icon'): SVGSVGElement {
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('viewBox', '0 0 16 16');
  svg.setAttribute('width', '16');
  svg.setAttribute('height', '16');
  svg.setAttribute('aria-hidden', 'true');
  svg.setAttribute('class', className);
  for (const d of paths) {
    const path = document.createElementNS(SVG, 'path');
    path.setAttribute('d', d);
    svg.append(path);
  }
  return svg;
}

export const Icons = {
  send: ['M1.7 14.3 15 8 1.7 1.7l1.6 5.1L10 8l-6.7 1.2z'],
  stop: ['M4 4h8v8H4z'],
  menu: ['M3 7h2v2H3zM7 7h2v2H7zM11 7h2v2h-2z'],
  chevron: ['M6 4l4 4-4 4-.7-.7L8.6 8 5.3 4.7z'],
  check: ['M6.3 11.3 2.6 7.6l.8-.8 2.9 2.9 6.3-6.3.8.8z'],
  error: ['M8 1.5a6.5 6.5 0 1 0 0 13 6.5 6.5 0 0 0 0-13zm.7 9.8H7.3v-1.4h1.4zm0-2.8H7.3V4.7h1.4z'],
  recap: ['M2 3h12v1.5H2zM2 6.5h12V8H2zM2 10h8v1.5H2zM12 10l2 1.6-2 1.6z'],
  spark: ['M8 1l1.6 4.4L14 7l-4.4 1.6L8 13l-1.6-4.4L2 7l4.4-1.6z'],
  file: ['M4 1.5h5l3.5 3.5v9.5h-8.5zM5 2.5v11h6.5V5.5H8.5v-3zM9.5 3v1.5H11z'],
  snippet: ['M5.5 4 1.5 8l4 4 .7-.7L2.9 8l3.3-3.3zM10.5 4l4 4-4 4-.7-.7L13.1 8 9.8 4.7z'],
  question: ['M8 1.5a6.5 6.5 0 1 0 0 13 6.5 6.5 0 0 0 0-13zm.7 10.3H7.3v-1.4h1.4zm1.6-5.2c-.2.5-.6.8-1 1.1-.4.3-.6.5-.6 1v.4H7.3v-.5c0-.8.4-1.2.8-1.6.4-.3.7-.5.7-1 0-.5-.4-.8-.9-.8-.6 0-.9.4-1 1H5.6c.1-1.3 1.1-2.2 2.4-2.2 1.4 0 2.4.8 2.4 2 0 .2 0 .4-.1.6z'],
  diff: ['M3 2h6v1.5H3zM3 5h6v1.5H3zM3 8h4v1.5H3zM11 8h1.5v2h2v1.5h-2v2H11v-2H9V10h2zM3 11h4v1.5H3z'],
  down: ['M8 12.5 3.5 8l.9-.9L7.4 10V3h1.2v7l3-2.9.9.9z'],
  close: ['M4.2 3.5 8 7.3l3.8-3.8.7.7L8.7 8l3.8 3.8-.7.7L8 8.7l-3.8 3.8-.7-.7L7.3 8 3.5 4.2z'],
  rewind: ['M8 2.5a5.5 5.5 0 1 1-5.2 7.3l1.4-.5A4 4 0 1 0 5.2 5.2L7 7H2.5V2.5l1.6 1.6A5.5 5.5 0 0 1 8 2.5z'],
  fork: [
    'M4 1.2a1.8 1.8 0 1 0 0 3.6 1.8 1.8 0 0 0 0-3.6zM12 1.2a1.8 1.8 0 1 0 0 3.6 1.8 1.8 0 0 0 0-3.6zM8 11.2a1.8 1.8 0 1 0 0 3.6 1.8 1.8 0 0 0 0-3.6z',
    'M3.4 4.6h1.2v1.5L8 8.7l3.4-2.6V4.6h1.2v2.1L8.6 9.6v1.7H7.4V9.6L3.4 6.7z',
  ],
};
