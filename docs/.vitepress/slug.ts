/**
 * The anchor GitHub gives a heading: lower case, punctuation dropped, each space a hyphen. The site uses
 * it too, so that a link to `page.md#heading` reaches the same heading on GitHub and on the site.
 */
export function githubSlug(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}
