"""Kernels: compile once per (program, formats), call many times; an in-memory kernel cache."""
from .api import compile, einsum, kernel_cache, wait_optimized
from .kernel import Kernel

__all__ = ["Kernel", "compile", "einsum", "kernel_cache", "wait_optimized"]
