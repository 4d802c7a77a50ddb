"""What the page shows as HTML (a message, a card's sentence), as plain text for a terminal or a load test's log."""
from __future__ import annotations

import html
import re


def plain_text(markup: str | None) -> str:
    """`markup` without its tags and with its entities read (&lt; is <)."""
    return html.unescape(re.sub(r"<[^>]+>", "", markup or ""))
