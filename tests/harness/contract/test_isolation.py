"""The namespace variable and the join's command line (:mod:`harness.contract.isolation`)."""

from __future__ import annotations

from harness.contract.isolation import HOLDER_MODULE, NETNS_ENV, join_paths, join_value, joined_argv


def test_the_variable_names_the_namespaces_in_their_order() -> None:
    paths = ["/proc/7/ns/user", "/proc/7/ns/net"]
    assert join_paths(join_value(paths)) == paths
    assert join_paths("") == [] and join_paths(None) == []


def test_a_fresh_interpreter_joins_only_where_its_environment_names_a_namespace() -> None:
    argv = ["-m", "harness.worker", "job.json", "events.jsonl"]
    assert joined_argv(argv, {}) == argv
    assert joined_argv(argv, {NETNS_ENV: ""}) == argv  # emptied: not joined
    assert joined_argv(argv, {NETNS_ENV: "/proc/7/ns/net"}) == [
        "-m",
        HOLDER_MODULE,
        "join",
        "harness.worker",
        "job.json",
        "events.jsonl",
    ]
