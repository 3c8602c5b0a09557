"""The arguments of a call to a tool, checked against its input schema as the CLI checks its options:
each one the tool declares, none it requires missing, each of the kind declared (a string is no
list, "no" no boolean, true no number). The MCP tools and the JSON API both check here, so that
they take the same calls and refuse the others with the same one line, never a validator's page
or a misspelled argument silently left out."""

from kgrdf.errors import BadInput


def check(given: dict, schema: dict) -> None:
    """Raise BadInput for the first argument of ``given`` that ``schema`` (a tool's input schema)
    does not take, the first it requires that is missing, or the first of another kind."""
    takes = schema.get("properties", {})
    unknown = sorted(set(given) - set(takes))
    if unknown:
        raise BadInput(f"unknown argument {unknown[0]!r}; this takes " + ", ".join(takes))
    for name in schema.get("required", []):
        if name not in given:
            raise BadInput(f"{name} is needed")
    for name, value in given.items():
        _check_kind(name, value, takes.get(name, {}))


WHOLE = 10**18  # a whole number an argument may be is of at most 18 digits, by every door

KINDS = {  # a JSON schema type, and how a message names it
    "string": (str, "text"),
    "integer": (int, "a whole number"),
    "number": ((int, float), "a number"),
    "boolean": (bool, "true or false"),
    "array": (list, "a list"),
    "object": (dict, "an object"),
    "null": (type(None), "null"),
}


def _check_kind(name: str, value, schema: dict) -> None:
    """Raise BadInput unless ``value`` is of a kind ``schema`` allows (a JSON type, a list of one, or
    any of several): what the MCP tool refuses, the API refuses too, rather than a string read as a
    list of letters or "no" as true."""
    from kgrdf import inputs

    allowed = schema.get("anyOf", [schema])
    for one in allowed:
        kind = one.get("type")
        if kind is None:
            return  # no type declared: the call checks it
        python, _words = KINDS[kind]
        if isinstance(value, python) and not (isinstance(value, bool) and kind in ("integer", "number")):
            if kind == "array" and "items" in one:
                for item in value:
                    _check_kind(f"each of {name}", item, one["items"])
            if kind == "integer" and not -WHOLE < value < WHOLE:  # (as the API's query parameters are read)
                raise BadInput(f"{name} must be a whole number of at most 18 digits, not {str(value)!r}")
            return
    words = " or ".join(KINDS[one["type"]][1] for one in allowed if one.get("type") != "null")
    raise BadInput(f"{name} must be {words}, not {inputs.shown(value)}")
