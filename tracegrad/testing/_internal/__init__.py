"""``tracegrad.testing._internal``: mirrors ``torch.testing._internal``, the test harness that
PyTorch's own test files and torch-style third-party suites import -- ``common_utils``
(``TestCase``, ``run_tests``, ``parametrize``...), ``common_device_type``
(``instantiate_device_type_tests``, ``@dtypes``...), ``common_dtype`` and ``common_cuda``.
Like torch's, it is private API for tests; nothing here is imported by ``tracegrad.testing``."""
