// The transcript follows new output while the user is at the bottom; scrolled up, it
// stays put and a "New messages" button says there is more below.

/** How close to the bottom (px) counts as at the bottom. */
const SLACK = 40;

export class Follower {
  private following = true;
  private lastTop = 0;

  constructor(
    private readonly box: HTMLElement,
    content: HTMLElement,
    private readonly button: HTMLElement,
  ) {
    box.addEventListener('scroll', () => {
      // Only the user scrolls up; scrolled down short of the bottom is this class's own
      // scroll with more output arrived since (or the user on the way down): unchanged.
      if (this.atBottom()) {
        this.following = true;
        this.button.hidden = true;
      } else if (box.scrollTop < this.lastTop) {
        this.following = false;
      }
      this.lastTop = box.scrollTop;
    });
    // Whatever grows the content (a reply streaming, a card, a highlighted block, the view
    // getting shorter), the bottom stays in view while following.
    const stick = (): void => {
      this.noticeScrollUp();
      if (this.following) {
        this.scrollToEnd();
      }
    };
    new ResizeObserver(stick).observe(content);
    new ResizeObserver(stick).observe(box);
    button.addEventListener('click', () => this.toBottom());
  }

  /** Whether new output is followed (the user has not scrolled away from the bottom). */
  get isFollowing(): boolean {
    return this.following;
  }

  /** Back to where the user was reading, after the transcript was drawn again. */
  restore(scrollTop: number): void {
    this.box.scrollTop = scrollTop;
    this.lastTop = this.box.scrollTop;
  }

  /** Scroll to the newest output and follow it (after sending a prompt, say). */
  toBottom(): void {
    this.following = true;
    this.button.hidden = true;
    this.scrollToEnd();
  }

  /** New output arrived: followed, or announced when the user scrolled away. */
  arrived(): void {
    this.noticeScrollUp();
    if (this.following) {
      this.scrollToEnd();
    } else {
      this.button.hidden = false;
    }
  }

  /**
   * Show `element` at the top of the view (the recap after a compaction), or in its
   * middle (a search hit, with what came before and after it), and stop following.
   */
  reveal(element: HTMLElement, block: 'start' | 'center' = 'start'): void {
    element.scrollIntoView({ block });
    this.following = this.atBottom();
    this.lastTop = this.box.scrollTop;
  }

  /**
   * The user scrolled up, though its scroll event has not come yet (it comes with the next
   * frame, and output that arrives first must not pull the view back down): the view is
   * above the bottom and above where it was last left.
   */
  private noticeScrollUp(): void {
    if (this.following && !this.atBottom() && this.box.scrollTop < this.lastTop) {
      this.following = false;
    }
  }

  private scrollToEnd(): void {
    this.box.scrollTop = this.box.scrollHeight;
    this.lastTop = this.box.scrollTop;
  }

  private atBottom(): boolean {
    return this.box.scrollHeight - this.box.scrollTop - this.box.clientHeight < SLACK;
  }
}
