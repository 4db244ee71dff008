"""Names this directory `policy` for the tests and mypy, which import the rules as `policy.policies`.

The analyzer never imports it: it runs `__main__.py` with this directory on sys.path, where the rules are the
package `policies`. Being a package also keeps `policy/__main__.py` (`policy.__main__`) apart from the
program's own `__main__.py` when mypy checks both.
"""
