#!/usr/bin/env python3
"""Checks the links of autoreg's documentation (README.md, docs/*.md, io/README.md).

Every relative link and image must name a file or folder of the repository, and every
#anchor into a markdown file must be one of that file's headings, slugged as GitHub does
(lower case; punctuation other than '-' and '_' dropped; spaces to '-'; a repeated
heading gets -1, -2, ...). http(s), mailto and other schemes are not checked, nor links
inside fenced code blocks or inline code. The README must be at most 300 lines.

usage: scripts/check-links.py [REPOSITORY_ROOT]   (default: the folder above scripts/)
Prints 'FILE:LINE: broken link TARGET' for each broken link and a one-line summary;
exits 1 if anything is broken. Standard library only.
"""
import os
import re
import sys
from urllib.parse import unquote

README_MAX_LINES = 300

FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
ATX_HEADING = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
SETEXT_UNDERLINE = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
# An inline link or image: [text](target "title"); the text may hold one level of
# brackets and run over several lines, the target may hold balanced parentheses.
INLINE_LINK = re.compile(
    r"!?\[((?:[^\[\]]|\[[^\[\]]*\])*)\]"
    r"\(\s*(<[^>\n]*>|(?:[^()\s]|\([^()\s]*\))*)(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^ {0,3}\[[^\]]+\]:[ \t]*(<[^>]*>|\S+)", re.M)
HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.I)
SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


def blank_fences(text):
    """The text with every fenced code block's lines (fences included) emptied, so that
    offsets and line numbers stay those of the file."""
    out = []
    fence = None
    for line in text.split("\n"):
        m = FENCE.match(line)
        if fence is None:
            if m:
                fence = m.group(1)
                out.append("")
                continue
            out.append(line)
        else:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) \
                    and line.strip() == m.group(1):
                fence = None
            out.append("")
    return "\n".join(out)


def blank_code_spans(text):
    """Inline code spans replaced by spaces (newlines kept): links in them are not links."""
    def blank(m):
        return "".join("\n" if c == "\n" else " " for c in m.group(0))
    # A span does not cross a blank line.
    return re.sub(r"(`+)(?:(?!\n[ \t]*\n).)+?\1", blank, text, flags=re.S)


def heading_text(raw):
    """A heading's text as GitHub renders it, before slugging."""
    t = re.sub(r"!\[([^\]]*)\]\([^)]*\)", r"\1", raw)       # images: their alt text
    t = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", t)            # links: their text
    t = re.sub(r"<[^>]+>", "", t)                              # HTML tags
    t = t.replace("`", "")
    t = re.sub(r"(\*+)(.+?)\1", r"\2", t)                      # emphasis
    t = re.sub(r"(?<!\w)(_+)(.+?)\1(?!\w)", r"\2", t)
    return t.strip()


def slug(text):
    s = heading_text(text).lower()
    s = re.sub(r"[^\w\- ]", "", s)
    return s.replace(" ", "-")


def anchors_of(path, cache={}):
    """The GitHub anchors of a markdown file's headings."""
    if path in cache:
        return cache[path]
    with open(path, encoding="utf-8") as f:
        lines = blank_fences(f.read()).split("\n")
    seen = {}
    anchors = set()

    def add(raw):
        base = slug(raw)
        n = seen.get(base, 0)
        seen[base] = n + 1
        anchors.add(base if n == 0 else "%s-%d" % (base, n))

    for i, line in enumerate(lines):
        m = ATX_HEADING.match(line)
        if m:
            add(m.group(2) or "")
            continue
        if i > 0 and SETEXT_UNDERLINE.match(line) and lines[i - 1].strip() \
                and not ATX_HEADING.match(lines[i - 1]) and "|" not in lines[i - 1] \
                and not re.match(r"^ {0,3}([-*+]|\d+[.)])\s", lines[i - 1]):
            add(lines[i - 1].strip())
    cache[path] = anchors
    return anchors


def links_of(text):
    """(line, target) for every link, image and reference definition outside code."""
    text = blank_code_spans(blank_fences(text))
    found = []
    for m in INLINE_LINK.finditer(text):
        found.append((m.start(2), m.group(2)))
    for m in REFERENCE_DEFINITION.finditer(text):
        found.append((m.start(1), m.group(1)))
    for m in HTML_LINK.finditer(text):
        found.append((m.start(1), m.group(1)))
    return sorted((text.count("\n", 0, at) + 1, target) for at, target in found)


def check_file(root, rel, problems):
    path = os.path.join(root, rel)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    checked = 0
    for line, target in links_of(text):
        target = target.strip()
        if target.startswith("<") and target.endswith(">"):
            target = target[1:-1].strip()
        if not target or SCHEME.match(target) or target.startswith("//"):
            continue
        checked += 1
        file_part, _, anchor = target.partition("#")
        file_part = file_part.split("?", 1)[0]
        if file_part:
            if file_part.startswith("/"):
                resolved = os.path.join(root, unquote(file_part).lstrip("/"))
            else:
                resolved = os.path.join(os.path.dirname(path), unquote(file_part))
            resolved = os.path.normpath(resolved)
            inside = os.path.commonpath([os.path.abspath(resolved), os.path.abspath(root)]) \
                == os.path.abspath(root)
            if not inside or not os.path.exists(resolved):
                problems.append("%s:%d: broken link %s" % (rel, line, target))
                continue
        else:
            resolved = path
        if anchor and os.path.isfile(resolved) and resolved.endswith(".md"):
            if unquote(anchor).lower() not in anchors_of(resolved):
                problems.append("%s:%d: broken link %s" % (rel, line, target))
    return checked


def main(argv):
    root = os.path.abspath(argv[1] if len(argv) > 1 else
                           os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
    files = ["README.md"]
    docs = os.path.join(root, "docs")
    if os.path.isdir(docs):
        files += sorted("docs/" + n for n in os.listdir(docs) if n.endswith(".md"))
    if os.path.isfile(os.path.join(root, "io", "README.md")):
        files.append("io/README.md")
    problems = []
    checked = 0
    for rel in files:
        if not os.path.isfile(os.path.join(root, rel)):
            problems.append("%s:1: missing file" % rel)
            continue
        checked += check_file(root, rel, problems)
    readme_lines = 0
    if os.path.isfile(os.path.join(root, "README.md")):
        with open(os.path.join(root, "README.md"), encoding="utf-8") as f:
            readme_lines = len(f.read().splitlines())
    if readme_lines > README_MAX_LINES:
        problems.append("README.md:%d: %d lines, more than %d" % (readme_lines, readme_lines, README_MAX_LINES))
    for p in problems:
        print(p)
    print("check-links: %d files, %d links checked, %d problems; README.md %d lines (at most %d)"
          % (len(files), checked, len(problems), readme_lines, README_MAX_LINES))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
