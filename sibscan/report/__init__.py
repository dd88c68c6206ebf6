"""Reports of a finished scan: the versioned JSON, Markdown to paste, one self-contained HTML page."""
from .compute import SCHEMA_VERSION, build_report
from .html import render_html
from .markdown import headline, render_markdown
from .write import FORMATS, write_reports

__all__ = sorted(["FORMATS", "SCHEMA_VERSION", "build_report", "headline", "render_html", "render_markdown", "write_reports"])
