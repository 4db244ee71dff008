"""A job's tags as GitLab makes them (pure: no Pulumi import): each one expanded once, then the list parsed.

GitLab expands each written tag once when it seeds the job (`expand_tag`: `$NAME`, `${NAME}`, `%NAME%` of the
variables it has then, as written), then `Gitlab::Ci::Tags::Parser` parses the list and `TagList#clean!` cleans it:
the tags are joined with `, ` and split again on commas, a tag written in double or single quotes after a comma
(or at the start) keeps its commas, blank tags are dropped, the rest stripped of ASCII spaces and NULs (not of a
no-break space) and made unique. So `"kapsule,gpu"`, `" kapsule"` or `$T` with `T: "kapsule, gpu"` are the tags
`kapsule` and `gpu`, and `$EMPTY` is no tag at all. A runner takes a job when it holds every one of them (names
are compared case-sensitively, as `Ci::Tag` stores them). check-ci routes these tags and `simulate --pipeline`
dispatches them: both call `job_tags`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from infra.model.routes import PIPELINE_SOURCES, SOURCE_VARIABLE, expand
from infra.pipeline.environment import Environment
from infra.pipeline.variables import expand_tag, value_text

_SPACE = "[ \t\n\v\f\r]"
"""What `\\s` is in GitLab's Ruby patterns: ASCII spaces only."""
QUOTED = tuple(re.compile(rf"(\A|,){_SPACE}*{quote}(.*?){quote}{_SPACE}*(?=,{_SPACE}*|\Z)") for quote in ('"', "'"))
"""`Parser#double_quote_pattern` and `#single_quote_pattern`: a quoted tag at the start or after a comma."""
STRIPPED = " \t\n\v\f\r\0"
"""What Ruby's `String#strip` removes at both ends."""
BLANK = frozenset(
    "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a\u2028\u2029"
    "\u202f\u205f\u3000"
)
"""ActiveSupport's `blank?` (`[[:space:]]`: Unicode's White_Space): a tag made only of these is dropped."""


def parse_tags(tags: Iterable[str]) -> tuple[str, ...]:
    """The tag list GitLab stores for these (expanded) tags: quoted ones first, then the rest split on commas;
    blanks dropped, each stripped, each once."""
    text = ", ".join(tags)
    found: list[str] = []

    def take(match: re.Match[str]) -> str:
        found.append(match[2])
        return ""

    for pattern in QUOTED:
        text = pattern.sub(take, text)
    found.extend(text.split(","))
    kept = (tag.strip(STRIPPED) for tag in found if not all(char in BLANK for char in tag))
    return tuple(dict.fromkeys(kept))


@dataclass(frozen=True)
class JobTags:
    """A job's tags once GitLab has expanded and parsed them."""

    tags: tuple[str, ...]
    """What GitLab stores: a reference it could not expand stays in it literally."""
    unknown: tuple[str, str] | None = None
    """(tag, variable) for a variable the job may only have in GitLab (predefined, settings, secrets): `tags` are
    not known."""
    nested: tuple[str, str, str, str] | None = None
    """(tag, tag once expanded, variable, its value) when a variable's value refers to another one: GitLab keeps
    that reference as a literal tag (gitlab#407129), which no runner holds."""

    @property
    def known(self) -> bool:
        return self.unknown is None and self.nested is None


def job_tags(written: Iterable[str], variables: dict[str, str | None]) -> JobTags:
    """`written` expanded with `variables` (a name's value, None when GitLab alone knows it), then parsed."""
    expanded: list[str] = []
    unknown: tuple[str, str] | None = None
    nested: tuple[str, str, str, str] | None = None
    for tag in written:
        expansion = expand_tag(tag, variables)
        expanded.append(expansion.tag)
        if expansion.nested and nested is None:
            nested = (tag, expansion.tag, *expansion.nested[0])
        if expansion.unknown and unknown is None:
            unknown = (tag, expansion.unknown[0])
    return JobTags(parse_tags(expanded), unknown if nested is None else None, nested)


def routed_tags(written: Iterable[str], environment: Environment, source: str | None = None) -> JobTags:
    """Tags as GitLab stores them for a job with these variables, in a pipeline of `source` (when given): what
    check-ci routes, and what `simulate --pipeline` dispatches."""
    known = {name: value_text(raw) for name, raw in environment.tag_variables.items()}
    if source is not None:
        known[SOURCE_VARIABLE] = source
    return job_tags(written, known)


def routes_alike(tags: Iterable[str], template: Iterable[str]) -> bool:
    """Whether `tags` reach the runners `template`'s do in a pipeline of every source: written in another order,
    twice, or `$CI_PIPELINE_SOURCE` for `${CI_PIPELINE_SOURCE}`, GitLab routes them alike."""
    tags, template = tuple(tags), tuple(template)
    return all(
        set(parse_tags(expand(tags, source))) == set(parse_tags(expand(template, source)))
        for source in PIPELINE_SOURCES
    )
