"""Build the API reference (HTML) of dask_strads from its numpydoc docstrings, with pdoc,
offline: ``python docs/build_api.py [OUTPUT_DIR]`` (default ``docs/api``)."""
import inspect
import pathlib
import sys

import pdoc
import pdoc.doc
import pdoc.render
from numpy.typing import ArrayLike

import dask_strads

_spelled_out = inspect.formatannotation


def _by_name(annotation):
    """An annotation as Python writes it, but numpy's ``ArrayLike`` by its name: Python spells
    the alias out as the union of a dozen private numpy types, alone or inside another union
    (``ArrayLike | None``)."""
    text = _spelled_out(annotation)
    array_like = _spelled_out(ArrayLike)
    members = array_like[array_like.index("[") + 1:-1]
    return text.replace(array_like, "ArrayLike").replace(members, "ArrayLike")


def build(output_dir):
    # The package imports its public names on first use; pdoc documents what the module
    # holds, so they are all imported first.
    for name in dask_strads.__all__:
        vars(dask_strads)[name] = getattr(dask_strads, name)
    # pdoc writes signatures with inspect's and other annotations with its own import of it
    inspect.formatannotation = pdoc.doc.formatannotation = _by_name
    pdoc.render.configure(docformat="numpy", footer_text=f"dask_strads {dask_strads.__version__}")
    pdoc.pdoc("dask_strads", output_directory=pathlib.Path(output_dir))
    return pathlib.Path(output_dir) / "dask_strads.html"


if __name__ == "__main__":
    print(build(sys.argv[1] if len(sys.argv) > 1 else pathlib.Path(__file__).parent / "api"))
