"""Reading a script's `__main__` block for the call that builds a class (construction/main_block.py): the
assignments that call needs are put in place of their names, nothing else of the block is taken."""

from __future__ import annotations

import ast
import textwrap

from fxlens.worker.construction.main_block import construction


def _read(source: str, name: str = "Policy"):
    found = construction(ast.parse(textwrap.dedent(source)), name)
    return None if found is None else (found[0].lineno, found[1])


def test_the_assignments_the_call_needs_stand_in_for_their_names():
    assert _read("""
        if __name__ == "__main__":
            args = parse()
            start = time.time()
            envs = make_envs(args.env_id, n=args.n)
            agent = Policy(envs, hidden=args.hidden)
            train(agent)
        """) == (6, "Policy(make_envs(parse().env_id, n=parse().n), hidden=parse().hidden)")


def test_a_name_reassigned_takes_its_last_value_before_the_call():
    assert _read("""
        if __name__ == "__main__":
            width = 32
            width = width * 2
            net = Policy(width)
            width = 1
        """) == (5, "Policy(32 * 2)")


def test_a_call_in_a_loop_takes_the_loops_first_item_and_a_classmethod_counts():
    assert _read("""
        if __name__ == "__main__":
            for preset in PRESETS:
                with torch.device("meta"):
                    model = Policy.from_preset(preset)
        """) == (5, "Policy.from_preset(next(iter(PRESETS)))")


def test_a_name_set_by_anything_but_an_assignment_leaves_no_construction():
    assert (
        _read("""
        if __name__ == "__main__":
            size = 4
            size += 1
            agent = Policy(size)
        """)
        is None
    )
    assert (
        _read("""
        if __name__ == "__main__":
            for envs in all_envs():
                pass
            agent = Policy(envs)
        """)
        is None
    )


def test_an_object_changed_in_place_before_the_call_is_not_inlined_but_one_only_read_is():
    changed = """
        if __name__ == "__main__":
            cfg = Config()
            cfg.depth = 4
            net = Policy(cfg)
        """
    assert _read(changed) is None
    assert (
        _read(
            changed.replace("cfg.depth = 4", "parser.add_argument('--depth')")
            .replace("Config()", "Parser()")
            .replace("Policy(cfg)", "Policy(parser)")
        )
        is None
    )
    assert _read(changed.replace("cfg.depth = 4", "print(cfg)")) == (5, "Policy(Config())")


def test_a_lambda_that_binds_a_name_the_block_assigned_is_not_inlined_into():
    assert (
        _read("""
        if __name__ == "__main__":
            n = 3
            agent = Policy(lambda n: n + 1, n)
        """)
        is None
    )


def test_no_main_block_or_no_call_to_the_class():
    assert _read("agent = Policy(4)\n") is None
    assert (
        _read("""
        if __name__ == "__main__":
            other = Other(4)
        """)
        is None
    )
