"""end_to_end: this guarantee or a stronger one, from the source to the egresses."""

from harness.checker.expectations.kind import ExpectationKind, Found, guarantee, guaranteed


def _judge(expected: str, found: Found) -> list:
    actual = None if found.unfinished else found.verdict
    return [guaranteed("end_to_end", expected, actual, "end to end", found.unfinished or "no egress evidence")]


KIND = ExpectationKind(
    "end_to_end",
    "this guarantee or a stronger one, end to end",
    (str,),
    _judge,
    rank=10,
    read=lambda value, scope: guarantee(value),
)
