"""eagle-console: a terminal operations console for an SGLang + EAGLE-3 GPU node."""

__version__ = "0.1.0"
