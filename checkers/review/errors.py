"""The error of the review artifacts: what keeps a document, a flow's picture or the site from being drawn.

A module of its own so that what draws the documents (docs.py, site.py) and what runs the flows they show
(flows.py) share it without importing each other."""


class DocsError(Exception):
    """What keeps the docs from being drawn, in words for the user."""
