"""Local paths that name something other than a regular file, refused before they are opened:
opening a FIFO for reading waits until something writes to it, and a device, socket or folder
is no data or model file."""
import os
import stat

_KINDS = ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
          (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


class NotARegularFile(ValueError):
    """A local path to a FIFO, device, socket or (where a file is wanted) folder."""


def check_regular_file(path, folder=False):
    """Raise :class:`NotARegularFile` when ``path`` is local and names anything but a regular
    file (or, with ``folder``, a folder). A missing path and a remote URL pass: their opener
    says what is wrong."""
    import fsspec  # here: importing the package's storage costs no fsspec
    from fsspec.implementations.local import LocalFileSystem

    fs, local = fsspec.core.url_to_fs(os.fspath(path))
    if not isinstance(fs, LocalFileSystem):
        return
    try:
        mode = os.stat(local).st_mode
    except OSError:
        return
    if stat.S_ISREG(mode) or (folder and stat.S_ISDIR(mode)):
        return
    kind = next((name for test, name in _KINDS if test(mode)), "no regular file")
    raise NotARegularFile(f"{path} is {kind}, not a regular file: give the path of a file"
                          + (" or of a folder" if folder else ""))
