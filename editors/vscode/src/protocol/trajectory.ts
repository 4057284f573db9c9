// `seri.trajectory`: whether runs are recorded.

/** `seri.trajectory`: whether runs are recorded, and where that comes from. */
export interface TrajectoryState {
  enabled: boolean;
  source: 'env' | 'profile' | 'default';
  /** What the profile's config.json holds (null: nothing). */
  stored?: boolean | null;
  /** A sentence for the user: on or off, and why. */
  message?: string;
  /** Set when SERI_TRAJECTORY_ENABLED in the server's environment overrides the stored toggle. */
  warning?: string;
}

/** One recorded event (`seri.trajectory.get`); `trajectoryId` with `compacted: true`. */
export interface RecordedEvent {
  seq: number;
  kind: string;
  createdAt: string;
  data: Record<string, unknown>;
  trajectoryId?: string;
}

/** `seri.trajectory.get`, as far as the chat reads it. */
export interface TrajectoryRecord {
  id: string | null;
  sessionId: string | null;
  events: RecordedEvent[];
}
