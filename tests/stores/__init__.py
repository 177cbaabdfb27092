"""Real stores the test suite writes for itself (see :mod:`tests.stores.zagg_stores` and :mod:`tests.stores.cache`)."""
