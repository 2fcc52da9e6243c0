"""The context slots of a native CPython entry (`runtime.pyentry`, `runtime.pyentry_emit`): the
C-API functions it calls and the fixed slots after them.  Apart from the emitter so that a warm
start, which loads a cached entry without emitting it (`codegen.keyed`), never imports llvmlite.ir.
"""
CAPI = ("PyFloat_AsDouble", "PyErr_Occurred", "PyErr_Clear", "Py_IncRef", "Py_DecRef",
        "PyLong_FromSsize_t", "PyObject_Vectorcall", "PyFloat_FromDouble", "PyLong_FromLongLong",
        "PyBool_FromLong", "PyEval_SaveThread", "PyEval_RestoreThread")
SLOT = {name: k for k, name in enumerate(CAPI + ("None", "empty", "dtype", "kernel", "block", "out",
                                                  "idx", "perm", "bound", "busy"))}
BASE = "ctensor_pyentry"
