"""The errors of a rule file: one mistake (:class:`RuleError`), or all of a file's."""

from __future__ import annotations

from typing import Optional, Sequence, Union

from sdp_expect.base.errors import Location, SdpExpectError

__all__ = ["RuleError", "RuleFileError"]


class RuleError(SdpExpectError):
    """One mistake in a rule file, naming the file and the rule.

    Its ``place`` is the file (a mistake of the whole file) or one part of it:
    ``Location('rules/orders.yml', rule=3)``, shown ``'rules/orders.yml, rule 3'``, or
    ``Location('rules/orders.yml', label="rule 'id > 0'")`` for a rule named by its key.

    :param code: A code from :data:`~sdp_expect.base.errors.ERROR_CATALOGUE`.
    :param detail: What exactly is wrong.
    :param place: The file as the user named it, and the part of it concerned.
    :param dataset: The dataset the rules are for, when known.
    :param expectation: The expectation's name, when known.
    :param fix: What to do instead; defaults to the catalogue's fix.
    """

    def __init__(
        self,
        code: str,
        detail: Optional[str] = None,
        *,
        place: Location,
        dataset: Optional[str] = None,
        expectation: Optional[str] = None,
        fix: Optional[str] = None,
    ) -> None:
        self.file = place.file
        """The file as the user named it."""
        self.rule = place.part
        """The part of the file as people read it (``'rule 3'``, ``"rule 'id > 0'"``,
        ``"group 'expect_or_drop'"``); None for the whole file."""
        super().__init__(
            code, detail, dataset=dataset, expectation=expectation, fix=fix, location=place
        )

    def with_context(
        self, *, dataset: Optional[str] = None, location: Union[Location, str, None] = None
    ) -> RuleError:
        """Return the same error with the dataset filled in where missing.

        :param dataset: The dataset, used when the error has none.
        :param location: Ignored: a rule error always knows its file and rule.
        """
        return RuleError(
            self.code,
            self.detail,
            place=self.place or Location(self.file),
            dataset=self.dataset if self.dataset is not None else dataset,
            expectation=self.expectation,
            fix=self.fix,
        )


class RuleFileError(SdpExpectError):
    """Every mistake found in one rule file; its code is the first mistake's code.

    :param file: The file as the user named it.
    :param errors: The mistakes, in file order (at least one).
    :param complete: False when checking stopped after :data:`~sdp_expect.rules.MAX_ERRORS` errors.
    """

    def __init__(
        self, file: str, errors: Sequence[SdpExpectError], *, complete: bool = True
    ) -> None:
        if not errors:
            raise ValueError("RuleFileError needs at least one error")
        self.file = file
        self.errors: list[SdpExpectError] = list(errors)
        self.complete = complete
        count = len(self.errors)
        stopped = "" if complete else " (checking stopped there; there may be more)"
        super().__init__(
            self.errors[0].code,
            f"{count} error{'' if count == 1 else 's'} in the rule file{stopped}",
            dataset=self.errors[0].dataset,
            fix="correct each error listed",
            location=Location(file),
        )

    def render(self, *, with_location: bool = True) -> str:
        """Return the message: a heading line, then one line per error."""
        lines = [f"[{self.code}] {self.location}: {self.detail}:" if with_location
                 else f"[{self.code}] {self.detail}:"]
        lines.extend(f"  - {error.render()}" for error in self.errors)
        return "\n".join(lines)

    def with_context(
        self, *, dataset: Optional[str] = None, location: Union[Location, str, None] = None
    ) -> RuleFileError:
        """Return the same errors with the dataset filled in where missing.

        :param dataset: The dataset, used by each error that has none.
        :param location: Used by each error that has no location.
        """
        errors = [e.with_context(dataset=dataset, location=location) for e in self.errors]
        return RuleFileError(self.file, errors, complete=self.complete)
