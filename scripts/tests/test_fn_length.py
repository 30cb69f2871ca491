"""Tests of scripts/fn-length on planted functions.

Run: python3 -m unittest discover -s scripts/tests   (from the repository root)
"""

import os
import tempfile
import unittest

from load_script import load


fn_length = load("fn-length")


def function(name, lines, attr=""):
    """A function of exactly `lines` lines, from its `fn` line to its closing brace."""
    body = ["    let _x = 1; // a line"] * (lines - 2)
    head = [attr] if attr else []
    return "\n".join(head + [f"fn {name}() {{"] + body + ["}"]) + "\n"


def crate(name, files):
    root = tempfile.mkdtemp(prefix="fn-length-test-")
    crate_dir = os.path.join(root, name)
    for rel, text in files.items():
        path = os.path.join(crate_dir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    return crate_dir


def problems(name, files, allowed=frozenset()):
    crate_dir = crate(name, files)
    return fn_length.verdict(crate_dir, fn_length.check(crate_dir), allowed)


class Lengths(unittest.TestCase):
    def test_a_planted_101_line_function_fails(self):
        found = problems("quota", {"src/lib.rs": function("planted", 101)})
        self.assertTrue(any("fn planted is 101 lines" in p for p in found), found)

    def test_a_100_line_function_passes(self):
        self.assertEqual(problems("quota", {"src/lib.rs": function("fits", 100)}), [])

    def test_a_150_line_test_function_passes(self):
        text = function("long_test", 150, "#[test]")
        text += "#[cfg(test)]\nmod tests {\n" + function("helper", 150) + "}\n"
        self.assertEqual(problems("quota", {"src/lib.rs": text}), [])

    def test_files_under_tests_are_exempt(self):
        files = {"tests/integration/main.rs": function("long", 150)}
        self.assertEqual(problems("quota", files), [])

    def test_braces_in_strings_and_comments_are_not_braces(self):
        text = 'fn tricky() {\n    let _s = "}";\n    // }\n}\n' + function("after", 101)
        found = problems("quota", {"src/lib.rs": text})
        self.assertEqual(len([p for p in found if "fn " in p]), 1, found)
        self.assertIn("fn after is 101 lines", found[0])

    def test_bench_may_have_three_and_not_four(self):
        three = "".join(function(f"b{i}", 120) for i in range(3))
        self.assertEqual(problems("bench", {"src/main.rs": three}), [])
        four = three + function("b3", 120)
        self.assertTrue(problems("bench", {"src/main.rs": four}))

    def test_an_allowed_function_does_not_fail(self):
        crate_dir = crate("quota", {"src/lib.rs": function("known", 130)})
        found = fn_length.check(crate_dir)
        allowed = {(found[0][0], "known")}
        self.assertEqual(fn_length.verdict(crate_dir, found, allowed), [])


if __name__ == "__main__":
    unittest.main()
