"""Exceptions of the package: every failure of the compiler, the runtime or
an argument check becomes one of these, carrying the message of its source."""


class PagedAttnError(RuntimeError):
    """A failure reported by the PagedAttn compiler or runtime."""


class CompileError(PagedAttnError):
    """pa-compile rejected a configuration or failed (its message is kept)."""


class BundleNotFoundError(PagedAttnError):
    """Ahead-of-time mode: no prebuilt bundle for the configuration."""
