/* The grade matrix of runs given as plain dicts, read at C speed (bench/evaluation/from_dicts.py).
 *
 * Reading millions of Python floats out of dicts is what evaluating a run from dicts costs; here each
 * run entry is read once, straight from the dict's table. A judged doc's rank is the number of its
 * run's scores above its own (a binary search over the run's scores, sorted only when the run does
 * not already come in descending order), plus, where it shares its score, the number of those docs
 * with a larger id: trec_eval's order, score descending, then doc id descending.
 *
 * Only exact str doc ids and numbers whose type is defined in C are read here, so no Python code runs
 * while borrowed references are held; anything else returns False and the numpy path reads it instead.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

typedef struct {
    double score;
    PyObject *doc; /* borrowed from the run dict */
} Entry;

typedef struct {
    Entry *entries;
    double *sorted; /* the run's scores, descending */
    int64_t *grades; /* the question's relevant grades, for its ideal row */
    Py_ssize_t entry_cap, grade_cap;
} Scratch;

enum { READ_OK = 0, READ_ERROR = -1, READ_OTHER = -2 };

/* A number as a double. Besides float and int, any type defined in C that converts itself (numpy's
 * scalars, bool): its conversion runs no Python code. READ_OTHER for what this reader leaves to
 * Python: a class defined in Python, or a value that is not a number. */
static int read_number(PyObject *value, double *out)
{
    if (PyFloat_CheckExact(value)) {
        *out = PyFloat_AS_DOUBLE(value);
        return READ_OK;
    }
    if (PyLong_CheckExact(value)) { /* a grade, usually: converted without a float object */
        *out = PyLong_AsDouble(value);
        if (*out == -1.0 && PyErr_Occurred()) {
            PyErr_Clear();
            return READ_OTHER;
        }
        return READ_OK;
    }
    if (PyType_HasFeature(Py_TYPE(value), Py_TPFLAGS_HEAPTYPE))
        return READ_OTHER;
    *out = PyFloat_AsDouble(value);
    if (*out == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return READ_OTHER;
    }
    return READ_OK;
}

static int grow(void **buffer, Py_ssize_t need, size_t item)
{
    void *fresh = PyMem_Realloc(*buffer, (size_t)need * item);
    if (fresh == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *buffer = fresh;
    return 0;
}

/* Room for a run of n entries: its entries and its sorted scores. */
static int reserve_run(Scratch *s, Py_ssize_t n)
{
    if (n <= s->entry_cap)
        return 0;
    Py_ssize_t cap = n > 2 * s->entry_cap ? n : 2 * s->entry_cap;
    if (grow((void **)&s->entries, cap, sizeof(Entry)) < 0 || grow((void **)&s->sorted, cap, sizeof(double)) < 0)
        return -1;
    s->entry_cap = cap;
    return 0;
}

/* Room for n relevant grades. */
static int reserve_grades(Scratch *s, Py_ssize_t n)
{
    if (n <= s->grade_cap)
        return 0;
    Py_ssize_t cap = n > 2 * s->grade_cap ? n : 2 * s->grade_cap;
    if (grow((void **)&s->grades, cap, sizeof(int64_t)) < 0)
        return -1;
    s->grade_cap = cap;
    return 0;
}

static int descending_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x < y) - (x > y);
}

static int descending_ints(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x < y) - (x > y);
}

/* A question's relevant grades, descending: by insertion when they are few, as they usually are. */
static void sort_grades(int64_t *grades, Py_ssize_t n)
{
    if (n > 32) {
        qsort(grades, (size_t)n, sizeof(int64_t), descending_ints);
        return;
    }
    for (Py_ssize_t i = 1; i < n; i++) {
        int64_t g = grades[i];
        Py_ssize_t j = i;
        for (; j > 0 && grades[j - 1] < g; j--)
            grades[j] = grades[j - 1];
        grades[j] = g;
    }
}

/* trec_eval reads a grade as an integer; a grade above int64's range is as good as its maximum. */
static int64_t grade_of(double raw)
{
    if (!(raw > 0))
        return 0;
    if (raw >= 9.2e18)
        return INT64_MAX;
    return (int64_t)raw;
}

/* The first position of the descending scores[0:n] whose score is <= value. */
static Py_ssize_t first_at_most(const double *scores, Py_ssize_t n, double value)
{
    Py_ssize_t lo = 0, hi = n;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (scores[mid] > value)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* One question: its ranked row, its ideal row and its count of relevant docs. */
static int fill_question(PyObject *judged, PyObject *run, Py_ssize_t depth, Scratch *s,
                         int64_t *ranked, int64_t *ideal, int64_t *n_relevant)
{
    Py_ssize_t n = PyDict_GET_SIZE(run), pos = 0, m = 0;
    PyObject *doc, *value;
    int in_order = 1;
    if (reserve_run(s, n) < 0)
        return READ_ERROR;
    while (PyDict_Next(run, &pos, &doc, &value)) {
        double score;
        int got = read_number(value, &score);
        if (got != READ_OK || !PyUnicode_CheckExact(doc))
            return READ_OTHER;
        if (isnan(score)) {
            PyErr_SetString(PyExc_ValueError, "a run score is NaN");
            return READ_ERROR;
        }
        if (m > 0 && score > s->sorted[m - 1])
            in_order = 0;
        s->entries[m].score = score;
        s->entries[m].doc = doc;
        s->sorted[m] = score;
        m++;
    }
    if (!in_order)
        qsort(s->sorted, (size_t)m, sizeof(double), descending_doubles);

    Py_ssize_t n_rel = 0;
    pos = 0;
    if (reserve_grades(s, PyDict_GET_SIZE(judged)) < 0)
        return READ_ERROR;
    while (PyDict_Next(judged, &pos, &doc, &value)) {
        double raw, score;
        if (read_number(value, &raw) != READ_OK || !PyUnicode_CheckExact(doc))
            return READ_OTHER;
        if (!(raw > 0))
            continue;
        int64_t grade = grade_of(raw);
        s->grades[n_rel++] = grade;
        PyObject *got = PyDict_GetItemWithError(run, doc);
        if (got == NULL) {
            if (PyErr_Occurred())
                return READ_ERROR;
            continue; /* not retrieved */
        }
        read_number(got, &score); /* read above, as a number of the run */
        Py_ssize_t rank = first_at_most(s->sorted, m, score);
        if (rank >= depth)
            continue;
        if (rank + 1 < m && s->sorted[rank + 1] == score) { /* tied: larger doc ids come first */
            for (Py_ssize_t i = 0; i < m && rank < depth; i++) {
                if (s->entries[i].score != score)
                    continue;
                int order = PyUnicode_Compare(s->entries[i].doc, doc);
                if (order == -1 && PyErr_Occurred())
                    return READ_ERROR;
                rank += order > 0;
            }
            if (rank >= depth)
                continue;
        }
        ranked[rank] = grade;
    }
    sort_grades(s->grades, n_rel);
    for (Py_ssize_t i = 0; i < n_rel && i < depth; i++)
        ideal[i] = s->grades[i];
    *n_relevant = n_rel;
    return READ_OK;
}

static int writable_int64(PyObject *obj, Py_buffer *view, Py_ssize_t items, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return -1;
    if (view->itemsize != 8 || view->len != items * 8 || view->format == NULL ||
        (view->format[0] != 'q' && view->format[0] != 'l')) {
        PyBuffer_Release(view);
        PyErr_Format(PyExc_TypeError, "%s: a C-contiguous int64 array of %zd items is needed", name, items);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(fill_grades_doc,
             "fill_grades(judged, runs, depth, ranked, ideal, n_relevant) -> bool\n\n"
             "Fill the zeroed int64 arrays ranked and ideal (questions x depth) and n_relevant from\n"
             "the lists of dicts judged ({doc: grade}) and runs ({doc: score}), one of each per\n"
             "question. False, with the arrays partly filled, when an entry is not a str doc id with\n"
             "a number whose type is defined in C: those are read in Python. ValueError for a NaN\n"
             "score, and for nothing else.");

static PyObject *fill_grades(PyObject *self, PyObject *args)
{
    PyObject *judged, *runs, *ranked_obj, *ideal_obj, *counts_obj;
    Py_ssize_t depth;
    if (!PyArg_ParseTuple(args, "O!O!nOOO", &PyList_Type, &judged, &PyList_Type, &runs, &depth, &ranked_obj,
                          &ideal_obj, &counts_obj))
        return NULL;
    Py_ssize_t n = PyList_GET_SIZE(judged);
    if (PyList_GET_SIZE(runs) != n || depth < 1) {
        PyErr_SetString(PyExc_TypeError, "judged and runs: one dict of each per question, depth >= 1");
        return NULL;
    }
    Py_buffer ranked, ideal, counts;
    if (writable_int64(ranked_obj, &ranked, n * depth, "ranked") < 0)
        return NULL;
    if (writable_int64(ideal_obj, &ideal, n * depth, "ideal") < 0) {
        PyBuffer_Release(&ranked);
        return NULL;
    }
    if (writable_int64(counts_obj, &counts, n, "n_relevant") < 0) {
        PyBuffer_Release(&ranked);
        PyBuffer_Release(&ideal);
        return NULL;
    }
    Scratch scratch = {NULL, NULL, NULL, 0, 0};
    int status = READ_OK;
    for (Py_ssize_t q = 0; q < n && status == READ_OK; q++) {
        PyObject *j = PyList_GET_ITEM(judged, q), *r = PyList_GET_ITEM(runs, q);
        if (!PyDict_CheckExact(j) || !PyDict_CheckExact(r)) {
            status = READ_OTHER;
            break;
        }
        status = fill_question(j, r, depth, &scratch, (int64_t *)ranked.buf + q * depth,
                               (int64_t *)ideal.buf + q * depth, (int64_t *)counts.buf + q);
    }
    PyMem_Free(scratch.entries);
    PyMem_Free(scratch.sorted);
    PyMem_Free(scratch.grades);
    PyBuffer_Release(&ranked);
    PyBuffer_Release(&ideal);
    PyBuffer_Release(&counts);
    if (status == READ_ERROR)
        return NULL;
    return PyBool_FromLong(status == READ_OK);
}

static PyMethodDef methods[] = {
    {"fill_grades", fill_grades, METH_VARARGS, fill_grades_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_from_dicts", "The grade matrix of runs given as plain dicts, read in C.", -1, methods,
};

PyMODINIT_FUNC PyInit__from_dicts(void)
{
    return PyModule_Create(&module);
}
