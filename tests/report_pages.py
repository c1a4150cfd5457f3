"""Checks shared by the tests of the HTML reports (``zoo bench``, ``zoo compare``)."""

import re

EMBEDDED_IMAGE = re.compile(r"data:image/png;base64,[A-Za-z0-9+/=]+")


def is_self_contained(page: str) -> bool:
    """No image read from a file and no web link: the embedded images' base64 text is left out of the search, since
    it may spell "http" by chance (it did: a flaky failure)."""
    text = EMBEDDED_IMAGE.sub("", page).replace("http-equiv", "")
    return 'src="figures/' not in page and "http" not in text
