"""A program checks its datafit and its penalty before it runs: it declares what it calls on each
(``needs``: the attribute names, by role), and :func:`check_pair` names what is missing."""


def check_pair(program, datafit, penalty):
    """Raise a TypeError if ``datafit`` or ``penalty`` lacks an attribute ``program`` needs of
    it (``program.needs``: ``"datafit"``, ``"coupled datafit"`` for a datafit whose classes are
    coupled, ``"penalty"``)."""
    roles = [("datafit", datafit), ("penalty", penalty)]
    if getattr(datafit, "coupled", False):
        roles.append(("coupled datafit", datafit))
    missing = [f"{role} {type(piece).__name__} has no {name!r}"
               for role, piece in roles for name in program.needs.get(role, ())
               if not hasattr(piece, name)]
    if missing:
        raise TypeError(f"{type(program).__name__} cannot fit this pair: " + "; ".join(missing))
