#!/usr/bin/env python3
"""Checks the user-facing docs: README.md is at most 300 lines, and every relative link in
README.md and docs/**/*.md (and zkr/README.md, testing/README.md when present) resolves to a
file or directory of the repository, and its #anchor, when it points into a Markdown file, to a
heading there. Exits 1 with one line per problem."""
import pathlib
import re
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
MAX_README_LINES = 300
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def anchors(md: pathlib.Path) -> set:
    """GitHub's anchors of a Markdown file's headings (outside code blocks)."""
    found, fenced = set(), False
    for line in md.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced and line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            title = re.sub(r"[^\w\- ]", "", title)
            found.add(title.replace(" ", "-"))
    return found


def links(md: pathlib.Path):
    fenced = False
    for number, line in enumerate(md.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            for target in LINK.findall(line):
                yield number, target


def main() -> int:
    problems = []
    readme = ROOT / "README.md"
    lines = len(readme.read_text(encoding="utf-8").splitlines())
    if lines > MAX_README_LINES:
        problems.append(f"README.md: {lines} lines, more than {MAX_README_LINES}")
    # docs/reliability/ holds fragments that scripts/reliability.sh pastes into docs/RELIABILITY.md:
    # their links are checked there, relative to docs/.
    fragments = ROOT / "docs" / "reliability"
    pages = [readme, *sorted(p for p in (ROOT / "docs").rglob("*.md") if fragments not in p.parents)]
    pages += [p for p in (ROOT / "zkr" / "README.md", ROOT / "testing" / "README.md") if p.exists()]
    for page in pages:
        for number, target in links(page):
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # https:, mailto: ...
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page
            where = f"{page.relative_to(ROOT)}:{number}"
            if not dest.exists():
                problems.append(f"{where}: {target}: no such file")
            elif anchor and dest.suffix == ".md" and anchor.lower() not in anchors(dest):
                problems.append(f"{where}: {target}: no heading #{anchor} in {dest.relative_to(ROOT)}")
    for problem in problems:
        print(f"check-docs: {problem}", file=sys.stderr)
    if not problems:
        print(f"check-docs: README.md {lines} lines; links of {len(pages)} pages resolve")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
