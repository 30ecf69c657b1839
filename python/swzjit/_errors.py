# swzjit: the exception classes. Every failure of the library arrives as a subclass of swzjit.Error
# named after its swz::ErrorKind; the extension builds them through _from_native.
"""Exceptions raised by swzjit: :class:`Error` and one subclass per library error kind."""


class Error(Exception):
    """A libswzjit error.

    Attributes:
        kind: the library's error kind ("invalid_argument", "unsupported", "compile", "driver",
            "no_device", "context_lost", "cache", "io" or "internal").
        message: what went wrong and what to do about it.
        compile_log, compile_options, source, source_name: for kind "compile", what NVRTC said and
            what it was given, so the failed compile can be reproduced (empty otherwise).
    """

    kind = "internal"

    def __init__(self, message, kind=None, compile_log="", compile_options=(), source="", source_name=""):
        super().__init__(message)
        self.message = message
        if kind is not None:
            self.kind = kind
        self.compile_log = compile_log
        self.compile_options = list(compile_options)
        self.source = source
        self.source_name = source_name

    def __str__(self):
        return f"{self.message} [{self.kind}]"


class InvalidArgumentError(Error, ValueError):
    """A caller-supplied value is out of range or malformed (also a ValueError)."""
    kind = "invalid_argument"


class UnsupportedError(Error):
    """A valid request this build or device cannot serve (dtype, arch, ...)."""
    kind = "unsupported"


class CompileError(Error):
    """NVRTC rejected a generated source; see compile_log and source."""
    kind = "compile"


class DriverError(Error):
    """A CUDA driver call failed."""
    kind = "driver"


class NoDeviceError(Error):
    """No CUDA driver or no GPU on this machine."""
    kind = "no_device"


class ContextLostError(Error):
    """A sticky error poisoned the CUDA context; the process must restart."""
    kind = "context_lost"


class CacheError(Error):
    """The on-disk cache could not be used."""
    kind = "cache"


class IoError(Error):
    """A file could not be read or written."""
    kind = "io"


class InternalError(Error):
    """A broken invariant inside the library (please report it)."""
    kind = "internal"


_BY_KIND = {cls.kind: cls for cls in (InvalidArgumentError, UnsupportedError, CompileError, DriverError,
                                      NoDeviceError, ContextLostError, CacheError, IoError, InternalError)}


def _from_native(kind, message, compile_log="", compile_options=(), source="", source_name=""):
    cls = _BY_KIND.get(kind, InternalError)
    return cls(message, kind, compile_log, compile_options, source, source_name)


def _invalid(message):
    """An InvalidArgumentError raised by the Python layer (same class as the library's)."""
    return InvalidArgumentError(message, "invalid_argument")
