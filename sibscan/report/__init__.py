"""Reports of a finished scan: the versioned JSON, Markdown to paste, one self-contained HTML page."""
from .compute import SCHEMA_VERSION, build_report
from .html import render_html
from .markdown import render_markdown, sentence_with_accuracy
from .write import write_reports
from ..options import REPORT_FORMATS as FORMATS

__all__ = ["FORMATS", "SCHEMA_VERSION", "build_report", "render_html", "render_markdown", "sentence_with_accuracy",
           "write_reports"]
