"""The one template library: every page and markdown summary is a Jinja2 template in
``templates/``; every page extends ``base.html``, which carries the one stylesheet
(``templates/style.css``)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import jinja2

TEMPLATES = Path(__file__).parents[1] / "templates"


@functools.cache
def _env(html: bool) -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=html,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=not html,
    )


def page(name: str, **context: Any) -> str:
    """The HTML page of template ``name``, its values escaped."""
    return _env(True).get_template(name).render(**context)


def markdown(name: str, **context: Any) -> str:
    """The markdown (or plain text) of template ``name``, its values as given."""
    return _env(False).get_template(name).render(**context)
