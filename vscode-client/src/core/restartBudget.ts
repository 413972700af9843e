// How often a dead server is restarted: a few times within a window, then never (until the user runs
// fxlens: Restart), so that a server that cannot start does not become a crash loop.

export class RestartBudget {
  private readonly restarts: number[] = [];

  constructor(
    readonly maxRestarts = 3,
    readonly windowMs = 3 * 60_000,
  ) {}

  /** Records a restart at `now` and returns true, or returns false once the budget is spent. */
  take(now: number): boolean {
    while (this.restarts.length && now - this.restarts[0] > this.windowMs) {
      this.restarts.shift();
    }
    if (this.restarts.length >= this.maxRestarts) {
      return false;
    }
    this.restarts.push(now);
    return true;
  }

  reset(): void {
    this.restarts.length = 0;
  }
}
