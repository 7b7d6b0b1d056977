#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* total(iterable) -> the sum of its integers, as a Python int. */
static PyObject *total(PyObject *self, PyObject *args) {
    PyObject *iterable;
    if (!PyArg_ParseTuple(args, "O", &iterable)) {
        return NULL;
    }
    PyObject *it = PyObject_GetIter(iterable);
    if (it == NULL) {
        return NULL;
    }
    long long sum = 0;
    PyObject *item;
    while ((item = PyIter_Next(it)) != NULL) {
        long long v = PyLong_AsLongLong(item);
        Py_DECREF(item);
        if (v == -1 && PyErr_Occurred()) {
            Py_DECREF(it);
            return NULL;
        }
        sum += v;
    }
    Py_DECREF(it);
    if (PyErr_Occurred()) {
        return NULL;
    }
    return PyLong_FromLongLong(sum);
}

static PyMethodDef methods[] = {
    {"total", total, METH_VARARGS, "Sum an iterable of integers."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_speedups", NULL, -1, methods};

PyMODINIT_FUNC PyInit__speedups(void) { return PyModule_Create(&module); }
