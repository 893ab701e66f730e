"""The exceptions ``trawl.scan`` raises besides ``OSError``, raised by the binding
(``trawl._native``) with the fields it knows as types: never told from a message's words."""


class ScanError(RuntimeError):
    """A scan that wrote no report for a reason other than a bad option or path (an output
    that could not be written, a temporary directory that is full): ``message`` is trawl's
    own words, ``code`` its exit code."""

    __module__ = "trawl"

    def __init__(self, code, message=""):
        super().__init__(message or f"trawl scan ended with exit code {code} and no report")
        self.code = code
        self.message = message


class OptionError(ScanError, ValueError):
    """An option ``scan()`` was given that trawl refuses (unknown, or a bad value): the message
    names it as a keyword argument, and says what would be taken; ``option`` is that keyword
    (``"top_files"``), or None where the refusal is no one option's. A ``ValueError``, and a
    ``ScanError`` with exit code 2."""

    __module__ = "trawl"

    def __init__(self, message, option=None):
        super().__init__(2, message)
        self.option = option
