"""SERI_TEST_WAITS: a test shortens one of the server's long waits by the constant's name."""

from __future__ import annotations

import pytest

from seri_lsp.waits import WAITS_ENV, wait_seconds


def test_a_wait_keeps_its_default_when_the_variable_is_unset_or_names_others() -> None:
    assert wait_seconds("MODELS_SECONDS", 5.0, env={}) == 5.0
    assert wait_seconds("MODELS_SECONDS", 5.0, env={WAITS_ENV: ""}) == 5.0
    assert wait_seconds("MODELS_SECONDS", 5.0, env={WAITS_ENV: "GREP_TIME_BUDGET=1"}) == 5.0


def test_a_named_wait_takes_the_seconds_given() -> None:
    env = {WAITS_ENV: "GREP_TIME_BUDGET=2, GREP_LINE_TIMEOUT=0.4"}
    assert wait_seconds("GREP_TIME_BUDGET", 5.0, env=env) == 2.0
    assert wait_seconds("GREP_LINE_TIMEOUT", 1.0, env=env) == 0.4


@pytest.mark.parametrize("value", ["", "soon", "0", "-1", "nan", "inf"])
def test_a_value_that_is_not_a_positive_number_of_seconds_is_refused_by_name(
    value: str,
) -> None:
    with pytest.raises(ValueError) as refused:
        wait_seconds("MODELS_SECONDS", 5.0, env={WAITS_ENV: f"MODELS_SECONDS={value}"})
    message = str(refused.value)
    assert f"{WAITS_ENV} gives MODELS_SECONDS {value!r}" in message
    assert "positive number of seconds" in message


def test_a_name_without_a_value_is_refused() -> None:
    with pytest.raises(ValueError, match="MODELS_SECONDS ''"):
        wait_seconds("MODELS_SECONDS", 5.0, env={WAITS_ENV: "MODELS_SECONDS"})
