"""The project's documentation (``docs/``) and the citations into it (see docs/README.md#how-to-cite).

(a) Every ``docs/<path>.md#<anchor>`` citation in the repository's ``.py`` files and ``README.md`` names a file
    that exists and an anchor in it: an explicit ``<a id="...">`` or a GitHub-style heading slug.
(b) No ``.py`` file cites the documents the project left behind ("DESIGN.md", section references into the seed
    notes such as ``notes 1.7`` or ``notes sec. 5 item 7``, ``ambiguity 8``).
(c) Every relative link inside ``docs/`` resolves, anchors included.

Pure text checks: no JAX, fast.
"""

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
THIS = Path(__file__).resolve()
SKIP_DIRS = {".git", ".venv", "venv", "__pycache__", "build", "dist", "bench_results", "figures_out", "node_modules"}


CITATION = re.compile(r"(?<![\w/.-])docs/((?:[\w.-]+/)*[\w.-]+\.md)(?:#([\w-]+))?")
OLD_STYLE = re.compile(
    r"""
      DESIGN\.md
    | \b(?:seed|the|Kaiser|McHutchon|Franzese|Duvenaud)\s+notes\b   # "seed notes 002", "as corrected in the notes"
    | \bnotes'                                                        # "the notes' sketch"
    | \bnotes?\s+(?:sec(?:tion)?\b|ch\.|item\b|\d|[ME]\d|\[)          # "notes 1.7", "notes sec. 5", "notes M9"
    | \bambiguit(?:y|ies)\s+\d                                        # "ambiguity 13", "ambiguities 4-8"
    | \bsec\.\s*5\s+item\b                                            # "sec. 5 item 3"
    """,
    re.VERBOSE | re.IGNORECASE,
)
EXPLICIT_ANCHOR = re.compile(r"""<a\s+(?:id|name)\s*=\s*["']([^"']+)["']""")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
FENCE = re.compile(r"^ {0,3}(```|~~~)")
LINK = re.compile(r"(?<!!)\[(?:[^\]]|\\\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")


def repo_files(suffix: str) -> list[Path]:
    """The project's files ending in ``suffix``: hidden folders (virtual environments such as CI's ``.venv-ci``,
    caches) and SKIP_DIRS left out."""
    return sorted(
        p
        for p in ROOT.rglob(f"*{suffix}")
        if not any(part in SKIP_DIRS or part.startswith(".") for part in p.relative_to(ROOT).parent.parts)
    )


def rel(path: Path) -> str:
    path = path.resolve()
    return path.relative_to(ROOT).as_posix() if path.is_relative_to(ROOT) else path.as_posix()


def prose_lines(text: str):
    """(line number, line) of a Markdown text outside fenced code blocks."""
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield number, line


def github_slug(heading: str) -> str:
    """The anchor GitHub gives a heading: inline links reduced to their text, lower case, punctuation other than
    hyphens and underscores removed, spaces turned into hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)
    text = re.sub(r"<[^>]+>", "", text).strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(markdown: Path) -> set[str]:
    """Explicit ``<a id>`` anchors and GitHub heading slugs (duplicates numbered -1, -2, ... as GitHub does)."""
    text = markdown.read_text(encoding="utf-8")
    found = set(EXPLICIT_ANCHOR.findall(text))
    seen: dict[str, int] = {}
    for _, line in prose_lines(text):
        match = HEADING.match(line)
        if match:
            slug = github_slug(match.group(2))
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def citation_problems(path: Path, text: str, root: Path = ROOT) -> list[str]:
    """``file:line: message`` for every ``docs/...md[#anchor]`` citation in ``text`` that does not resolve."""
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        for match in CITATION.finditer(line):
            doc, anchor = match.groups()
            target = root / "docs" / doc
            where = f"{path}:{number}: {match.group(0)}"
            if not target.is_file():
                problems.append(f"{where}: no file docs/{doc}")
            elif anchor is not None and anchor not in anchors(target):
                problems.append(f"{where}: no anchor {anchor!r} in docs/{doc}")
    return problems


def old_style_problems(path: Path, text: str) -> list[str]:
    return [
        f"{path}:{number}: {match.group(0)!r} in: {line.strip()}"
        for number, line in enumerate(text.splitlines(), 1)
        for match in OLD_STYLE.finditer(line)
    ]


def link_problems(markdown: Path) -> list[str]:
    """Relative links of a docs page whose file or anchor does not exist."""
    problems = []
    for number, line in prose_lines(markdown.read_text(encoding="utf-8")):
        for match in LINK.finditer(line):
            url = match.group(1)
            if re.match(r"^[a-z][a-z0-9+.-]*:", url, re.IGNORECASE):  # http:, https:, mailto:
                continue
            path, _, anchor = url.partition("#")
            target = (markdown.parent / path).resolve() if path else markdown
            where = f"{rel(markdown)}:{number}: ({url})"
            if not target.exists():
                problems.append(f"{where}: no such file")
            elif anchor and target.suffix == ".md" and anchor not in anchors(target):
                problems.append(f"{where}: no anchor {anchor!r} in {rel(target)}")
    return problems


def test_docs_index_and_source_pages_exist():
    for page in ("README.md", "architecture.md", "sources/kaiser.md", "sources/mchutchon.md", "sources/franzese.md"):
        assert (DOCS / page).is_file(), f"docs/{page} is missing"


def test_every_docs_citation_resolves():
    problems = []
    for path in [*repo_files(".py"), ROOT / "README.md"]:
        if path.resolve() == THIS:
            continue
        problems += citation_problems(Path(rel(path)), path.read_text(encoding="utf-8"))
    assert not problems, "citations into docs/ that do not resolve:\n" + "\n".join(problems)


def test_no_old_style_citations():
    problems = []
    for path in repo_files(".py"):
        name = rel(path)
        if path.resolve() == THIS:
            continue
        problems += old_style_problems(Path(name), path.read_text(encoding="utf-8"))
    assert not problems, (
        "old-style citations (cite docs/<path>.md#<anchor> or the source's own equation numbers instead):\n"
        + "\n".join(problems)
    )


@pytest.mark.parametrize("page", sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")))
def test_links_inside_docs_resolve(page):
    problems = link_problems(DOCS / page)
    assert not problems, "broken links:\n" + "\n".join(problems)


def test_the_checks_can_fail(tmp_path):
    """The checkers report a missing file, a missing anchor, an old-style citation and a broken docs link."""
    (tmp_path / "docs" / "sources").mkdir(parents=True)
    page = tmp_path / "docs" / "sources" / "x.md"
    page.write_text('# Title\n\n<a id="kept"></a>\n## A heading, renamed\n\n[up](../nowhere.md) [ok](#kept)\n')
    code = (
        "x = 1  # docs/sources/x.md#kept docs/sources/x.md#a-heading-renamed\n# docs/sources/x.md#gone\n# docs/y.md\n"
    )
    problems = citation_problems(Path("f.py"), code, root=tmp_path)
    assert problems == [
        "f.py:2: docs/sources/x.md#gone: no anchor 'gone' in docs/sources/x.md",
        "f.py:3: docs/y.md: no file docs/y.md",
    ]
    old = old_style_problems(Path("f.py"), "# notes 1.7 [NOTE], ambiguity 6\n# DESIGN.md section 4\nnote = 1\n")
    assert [p.split(": ")[1].split(" in")[0] for p in old] == ["'notes 1'", "'ambiguity 6'", "'DESIGN.md'"]
    assert [p.rsplit(": ", 1)[1] for p in link_problems(page)] == ["no such file"]
