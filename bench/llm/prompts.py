"""Prompts and rubrics as versioned files, read by one loader.

A prompt file is markdown: a ``version: NAME`` line before its first section, then ``## section``
headings, each followed by the text sent for it with ``{placeholders}`` filled in. Text before the
first section is for the people who read the file and is never sent. The version goes into what is
recorded of each reply, so that replies made with one prompt are told from another's.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from bench import files
from bench.errors import BenchError


@dataclass(frozen=True)
class Template:
    name: str
    version: str
    sha256: str  # of the whole file's text: any edit, even to the notes, makes another template
    text: str
    sections: dict[str, str]
    placeholder: re.Pattern[str]  # the placeholders its uses know of: anything else in braces stays as written

    def fill(self, section: str, **values: str) -> str:
        """A section with its placeholders filled in one pass (so that a value which happens to
        contain ``{claim}`` stays as it is)."""
        return self.placeholder.sub(lambda m: values[m.group(1)], self.sections[section])

    def messages(self, user: str, **values: str) -> list[dict[str, str]]:
        """The system section and the ``user`` section, filled in."""
        return [
            {"role": "system", "content": self.sections["system"]},
            {"role": "user", "content": self.fill(user, **values)},
        ]

    def describe(self, with_text: bool = False) -> dict[str, str]:
        out = {"name": self.name, "version": self.version, "sha256": self.sha256}
        return {**out, "text": self.text} if with_text else out


def load_template(path: Path, needs: dict[str, tuple[str, ...]], known: Iterable[str] = ()) -> Template:
    """Read a prompt file; ``needs`` maps each section it must have to the placeholders it is given,
    all of which it must use. ``known`` names placeholders of the same family that no section is
    given: a section that uses one is refused rather than sent with the braces in it."""
    names = sorted({p for given in needs.values() for p in given} | set(known))
    placeholder = re.compile(r"\{(" + "|".join(map(re.escape, names)) + r")\}" if names else r"(?!)")
    text = files.read_text(path)
    version = re.search(r"^version:\s*(\S+)\s*$", text.split("\n## ", 1)[0], re.M)
    if version is None:
        raise BenchError(f"{path}: no 'version: NAME' line before the first '## ' section; add one")
    sections: dict[str, str] = {}
    for block in re.split(r"^## ", text, flags=re.M)[1:]:
        title, _, body = block.partition("\n")
        sections[title.strip().lower()] = body.strip()
    for section, placeholders in needs.items():
        if not sections.get(section):
            raise BenchError(f"{path}: no '## {section}' section (or it is empty); it needs one")
        used = set(placeholder.findall(sections[section]))
        missing = [p for p in placeholders if p not in used]
        if missing:
            shown = ", ".join("{" + p + "}" for p in missing)
            raise BenchError(f"{path}: section '## {section}' lacks {shown}; put it where the text goes")
        if used - set(placeholders):
            shown = ", ".join("{" + p + "}" for p in sorted(used - set(placeholders)))
            raise BenchError(f"{path}: section '## {section}' uses {shown}, which it is not given; take it out")
    sha = hashlib.sha256(text.encode("utf-8")).hexdigest()
    return Template(path.name, version.group(1), sha, text, sections, placeholder)
