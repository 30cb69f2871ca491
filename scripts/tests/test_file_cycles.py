"""Tests of scripts/file-cycles on tiny fake crates written to a temp dir.

Run: python3 -m unittest discover -s scripts/tests   (from the repository root)
"""

import os
import tempfile
import textwrap
import unittest

from load_script import load


file_cycles = load("file-cycles")


def crate(files):
    """A temp crate dir with `files` ({path under src/: text}); returns its path."""
    root = tempfile.mkdtemp(prefix="file-cycles-test-")
    for rel, text in files.items():
        path = os.path.join(root, "src", rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(textwrap.dedent(text))
    return root


def cycles(files):
    root = crate(files)
    return [
        sorted(os.path.relpath(f, os.path.join(root, "src")) for f in component)
        for _, _, component in file_cycles.check(root)
    ]


LIB = "pub mod org;\npub mod sup;\n"


class ReExportCycles(unittest.TestCase):
    def test_a_mod_rs_with_items_named_through_its_re_export_is_a_node(self):
        # The issue 32 shape: run.rs names sup's message through sup/mod.rs's re-export,
        # and sup/mod.rs (which defines the actor) calls run.rs.
        found = cycles(
            {
                "lib.rs": LIB,
                "org/mod.rs": "pub mod run;\n",
                "org/run.rs": "use crate::sup::Await;\npub fn run(_: Await) {}\n",
                "sup/mod.rs": """\
                    mod messages;
                    pub use messages::Await;
                    pub struct Supervisor;
                    fn open() { crate::org::run::run(Await); }
                """,
                "sup/messages.rs": "pub struct Await;\n",
            }
        )
        self.assertEqual(found, [["org/run.rs", "sup/mod.rs"]])

    def test_a_pure_re_export_hub_stays_transparent(self):
        found = cycles(
            {
                "lib.rs": LIB,
                "org/mod.rs": "pub mod run;\n",
                "org/run.rs": "use crate::sup::Await;\npub fn run(_: Await) {}\n",
                "sup/mod.rs": "mod messages;\nmod actor;\npub use messages::Await;\n",
                "sup/messages.rs": "pub struct Await;\n",
                "sup/actor.rs": "fn open() { crate::org::run::run(crate::sup::Await); }\n",
            }
        )
        self.assertEqual(found, [])

    def test_children_using_their_parents_re_export_are_no_cycle(self):
        found = cycles(
            {
                "lib.rs": "pub mod sup;\n",
                "sup/mod.rs": """\
                    mod messages;
                    mod actor;
                    pub use messages::Await;
                    pub struct Supervisor;
                    fn open() { actor::start(); }
                """,
                "sup/messages.rs": "pub struct Await;\n",
                "sup/actor.rs": "use super::Await;\npub fn start() { let _ = Await; }\n",
            }
        )
        self.assertEqual(found, [])

    def test_a_sibling_cycle_is_still_found(self):
        found = cycles(
            {
                "lib.rs": "mod a;\nmod b;\n",
                "a.rs": "pub fn a() { crate::b::b(); }\n",
                "b.rs": "pub fn b() { crate::a::a(); }\n",
            }
        )
        self.assertEqual(found, [["a.rs", "b.rs"]])

    def test_test_code_is_exempt(self):
        found = cycles(
            {
                "lib.rs": "mod a;\nmod b;\n",
                "a.rs": "pub fn a() { crate::b::b(); }\n",
                "b.rs": "pub fn b() {}\n#[cfg(test)]\nmod tests { fn t() { crate::a::a(); } }\n",
            }
        )
        self.assertEqual(found, [])


if __name__ == "__main__":
    unittest.main()
