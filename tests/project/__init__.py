"""Tests of the project as a whole: its layout and layers, the docs, the CI script, light imports, the
benchmarks, and the suite's own cache of generated stores."""
