/* fstcrf._attributes: the columns of CRFsuite-style token dicts, read with the
 * CPython limited API.
 *
 * The one module of fstcrf written against the CPython API: cffi cannot walk
 * Python dicts, and walking them in Python costs more than python-crfsuite's
 * Cython conversion.  It does no numerics and knows no model: it maps the items
 * of token dicts to the columns of a vocabulary (fitted, or growing while an
 * extractor is fitted), and hands every token it does not understand to a Python
 * function that does (fstcrf/attributes.py, which also documents how a token is
 * named).
 *
 * A token is read here when it is a dict whose keys are str and whose values are
 * str (the attribute "key:value" = 1), bool (the attribute "key" = 0 or 1), int
 * or float (the attribute "key" = the value, when finite), or a list or tuple of
 * str (each the attribute "name" = 1: NLTK's CRFTagger gives its tokens so).
 * Anything else -- a set of names, a nested dict, bytes, a subclass, NaN, an int
 * too large for a double, the key of the lower labels -- goes whole to the
 * fallback.
 *
 * tag_tokens reads one sentence so and tags it in the same call, through the
 * address of ft_tag_entries (csrc/fstcrf_tagging.h) that fstcrf.engine.kernel
 * gives it: one sentence per call (python-crfsuite's Tagger.tag, NLTK's
 * CRFTagger) then makes no Python object but the list of labels.
 */
#define PY_SSIZE_T_CLEAN
#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030A0000      /* setup.py defines it too */
#endif
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fstcrf_tagging.h"     /* the structs of tag_tokens' kernel call (no kernel code is linked) */

/* A growing buffer of (column int64, value float64) entries and of the start
 * of each token's entries. */
typedef struct {
    int64_t *columns;       /* [capacity] */
    double *values;         /* [capacity] */
    Py_ssize_t size, capacity;
    int64_t *starts;        /* [num_tokens + 1] */
    Py_ssize_t num_starts, starts_capacity;
} Entries;

/* Reallocate *array [capacity] to hold ``wanted`` items of ``item`` bytes. */
static int resize(void **array, Py_ssize_t wanted, size_t item)
{
    void *bigger = realloc(*array, (size_t)wanted * item);
    if (bigger == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    *array = bigger;
    return 0;
}

static int add_entry(Entries *entries, int64_t column, double value)
{
    if (entries->size == entries->capacity) {
        Py_ssize_t wanted = entries->capacity ? 2 * entries->capacity : 256;
        if (resize((void **)&entries->columns, wanted, sizeof(int64_t)) < 0
            || resize((void **)&entries->values, wanted, sizeof(double)) < 0)
            return -1;
        entries->capacity = wanted;
    }
    entries->columns[entries->size] = column;
    entries->values[entries->size] = value;
    entries->size++;
    return 0;
}

static int add_start(Entries *entries)
{
    if (entries->num_starts == entries->starts_capacity) {
        Py_ssize_t wanted = entries->starts_capacity ? 2 * entries->starts_capacity : 64;
        if (resize((void **)&entries->starts, wanted, sizeof(int64_t)) < 0)
            return -1;
        entries->starts_capacity = wanted;
    }
    entries->starts[entries->num_starts++] = entries->size;
    return 0;
}

/* The vocabulary columns are looked up in: by_name (dict name -> column), by_key
 * (dict key -> dict value -> column, every name "key:value" under each of its
 * splits at the separator) and, when the vocabulary grows, names (the list of
 * names in column order; NULL: unknown names are dropped). */
typedef struct {
    PyObject *by_name, *by_key, *names, *separator;
} Vocabulary;

/* table[key][value] = column, the inner dict made on first use. */
static int put_split(PyObject *table, PyObject *key, PyObject *value, PyObject *column)
{
    PyObject *values = PyDict_GetItemWithError(table, key);     /* borrowed */
    if (values == NULL) {
        int status;
        if (PyErr_Occurred() || (values = PyDict_New()) == NULL)
            return -1;
        status = PyDict_SetItem(table, key, values);
        Py_DECREF(values);          /* the table holds it */
        if (status < 0)
            return -1;
    }
    return PyDict_SetItem(values, value, column);
}

static int add_column(Entries *entries, PyObject *column, double value)
{
    long long code = PyLong_AsLongLong(column);     /* long is 32 bits on Windows */
    if (code == -1 && PyErr_Occurred())
        return -1;
    return add_entry(entries, code, value);
}

/* The column of ``name`` (borrowed), a new one when the vocabulary grows; NULL
 * when it is unknown (no exception) or on error (exception set). */
static PyObject *column_of_name(Vocabulary *vocabulary, PyObject *name)
{
    PyObject *column = PyDict_GetItemWithError(vocabulary->by_name, name);     /* borrowed */
    int status;
    if (column != NULL || PyErr_Occurred() || vocabulary->names == NULL)
        return column;
    if ((column = PyLong_FromSsize_t(PyList_Size(vocabulary->names))) == NULL)
        return NULL;
    status = PyList_Append(vocabulary->names, name) < 0 ? -1
             : PyDict_SetItem(vocabulary->by_name, name, column);
    Py_DECREF(column);              /* by_name holds it */
    return status < 0 ? NULL : column;
}

/* Add the entry of the attribute ``name`` with ``value`` if the vocabulary has
 * or takes it.  Returns 0, or -1 with an exception set. */
static int add_name(Entries *entries, Vocabulary *vocabulary, PyObject *name, double value)
{
    PyObject *column = column_of_name(vocabulary, name);
    if (column == NULL)
        return PyErr_Occurred() ? -1 : 0;
    return add_column(entries, column, value);
}

/* Add the entry of the attribute "key:value" = 1 (``value`` a str) if the
 * vocabulary has or takes it, without joining the two when it is known. */
static int add_pair(Entries *entries, Vocabulary *vocabulary, PyObject *key, PyObject *value)
{
    PyObject *values = PyDict_GetItemWithError(vocabulary->by_key, key);     /* borrowed */
    PyObject *column, *prefix, *name;
    if (values != NULL) {
        column = PyDict_GetItemWithError(values, value);
        if (column != NULL)
            return add_column(entries, column, 1.0);
    }
    if (PyErr_Occurred())
        return -1;
    if (vocabulary->names == NULL)
        return 0;
    /* a new pair: its name may have a column already (a numeric key, another split) */
    if ((prefix = PyUnicode_Concat(key, vocabulary->separator)) == NULL)
        return -1;
    name = PyUnicode_Concat(prefix, value);
    Py_DECREF(prefix);
    if (name == NULL)
        return -1;
    column = column_of_name(vocabulary, name);
    Py_DECREF(name);
    if (column == NULL || put_split(vocabulary->by_key, key, value, column) < 0)
        return -1;
    return add_column(entries, column, 1.0);
}

/* Read one token dict.  Returns 1 when done, 0 when the token must go to the
 * fallback (its entries are taken back; a growing vocabulary keeps the names it
 * took, which the fallback meets again first, so their columns do not change),
 * -1 with an exception set. */
static int read_dict(Entries *entries, Vocabulary *vocabulary, PyObject *token, PyObject *forbidden)
{
    Py_ssize_t place = 0, first = entries->size;
    PyObject *key, *value;
    if (forbidden != Py_None) {
        int holds = PyDict_Contains(token, forbidden);
        if (holds != 0)
            return holds < 0 ? -1 : 0;
    }
    while (PyDict_Next(token, &place, &key, &value)) {
        PyTypeObject *kind = Py_TYPE(value);
        double number;
        int status;
        if (Py_TYPE(key) != &PyUnicode_Type)
            goto fallback;
        if (kind == &PyUnicode_Type)
            status = add_pair(entries, vocabulary, key, value);
        else {
            if (kind == &PyBool_Type)
                number = value == Py_True ? 1.0 : 0.0;
            else if (kind == &PyFloat_Type)
                number = PyFloat_AsDouble(value);
            else if (kind == &PyLong_Type) {
                number = PyLong_AsDouble(value);
                if (number == -1.0 && PyErr_Occurred()) {
                    PyErr_Clear();          /* too large: the fallback names it */
                    goto fallback;
                }
            } else
                goto fallback;
            if (!isfinite(number))
                goto fallback;
            status = add_name(entries, vocabulary, key, number);
        }
        if (status < 0)
            return -1;
    }
    return 1;
fallback:
    entries->size = first;
    return 0;
}

/* Read one token given as a list or tuple of attribute names, each "name" = 1 (a
 * name given twice twice: the rows add them).  Returns 1 when done, 0 when an item
 * is not a str (the token goes to the fallback, its entries taken back, as in
 * read_dict), -1 with an exception set. */
static int read_names(Entries *entries, Vocabulary *vocabulary, PyObject *token)
{
    int is_list = PyList_CheckExact(token);
    Py_ssize_t count = is_list ? PyList_Size(token) : PyTuple_Size(token), i, first = entries->size;
    for (i = 0; i < count; i++) {
        PyObject *name = is_list ? PyList_GetItem(token, i) : PyTuple_GetItem(token, i);    /* borrowed */
        if (Py_TYPE(name) != &PyUnicode_Type) {
            entries->size = first;
            return 0;
        }
        if (add_name(entries, vocabulary, name, 1.0) < 0)
            return -1;
    }
    return 1;
}

/* Add the entries of the (names, values) pair of lists the fallback returned. */
static int add_fallback_pairs(Entries *entries, Vocabulary *vocabulary, PyObject *pairs)
{
    PyObject *names, *values;
    Py_ssize_t count, i;
    if (!PyTuple_Check(pairs) || PyTuple_Size(pairs) != 2) {
        PyErr_SetString(PyExc_TypeError, "the fallback must return a pair (names, values)");
        return -1;
    }
    names = PyTuple_GetItem(pairs, 0);
    values = PyTuple_GetItem(pairs, 1);
    if (!PyList_Check(names) || !PyList_Check(values) || PyList_Size(names) != PyList_Size(values)) {
        PyErr_SetString(PyExc_TypeError, "the fallback must return two lists of equal length");
        return -1;
    }
    count = PyList_Size(names);
    for (i = 0; i < count; i++) {
        double value = PyFloat_AsDouble(PyList_GetItem(values, i));
        if (value == -1.0 && PyErr_Occurred())
            return -1;
        if (add_name(entries, vocabulary, PyList_GetItem(names, i), value) < 0)
            return -1;
    }
    return 0;
}

/* Add the entries of one token (``token`` borrowed from its list; its lower label
 * ``label``, or NULL), read here or by the fallback, then its end.  Returns 0, or -1
 * with an exception set. */
static int read_token(Entries *entries, Vocabulary *vocabulary, PyObject *token, PyObject *label, PyObject *reads,
                      PyObject *fallback, Py_ssize_t sentence, Py_ssize_t position)
{
    int read = 0;
    if (token == NULL)
        return -1;
    if (label == NULL || PyUnicode_CheckExact(label)) {
        if (PyDict_CheckExact(token))
            read = read_dict(entries, vocabulary, token, reads);
        else if (PyList_CheckExact(token) || PyTuple_CheckExact(token))
            read = read_names(entries, vocabulary, token);
        if (read < 0 || (read == 1 && label != NULL && add_pair(entries, vocabulary, reads, label) < 0))
            return -1;
    }
    if (read == 0) {
        PyObject *pairs = PyObject_CallFunction(fallback, "Onn", token, sentence, position);
        int status;
        if (pairs == NULL)
            return -1;
        status = add_fallback_pairs(entries, vocabulary, pairs);
        Py_DECREF(pairs);
        if (status < 0)
            return -1;
    }
    return add_start(entries);
}

static PyObject *as_bytearray(const void *data, Py_ssize_t count, size_t item)
{
    return PyByteArray_FromStringAndSize(count ? (const char *)data : "", count * (Py_ssize_t)item);
}

PyDoc_STRVAR(read_columns_doc,
"read_columns(token_lists, lower_lists, reads, by_name, by_key, names, fallback)\n"
"\n"
"The attributes of a corpus in the columns of a vocabulary, as three\n"
"bytearrays: columns int64 [M], values float64 [M] and where each token's entries\n"
"start, int64 [N+1], tokens in order across the B sentences.\n"
"\n"
"token_lists: list [B] of lists of tokens.  lower_lists: None, or list [B] of\n"
"lists of lower labels (one per token), each the attribute 'reads:label'.\n"
"reads: the key no dict may hold (its tokens go to the fallback), or None.\n"
"by_name: dict name -> column.  by_key: dict key -> dict value -> column,\n"
"values_by_key(by_name, ':').  names: None (a fitted vocabulary: unknown names\n"
"are dropped) or the list of names in column order (the vocabulary grows: an\n"
"unknown name takes the next column and joins names, by_name and by_key).\n"
"fallback(token, sentence, position) -> (names, values): the pairs of a token\n"
"read in Python, including its lower label's; it raises for a bad token.\n"
"Values of 0 are kept.");

static PyObject *read_columns(PyObject *module, PyObject *args)
{
    PyObject *token_lists, *lower_lists, *reads, *names, *fallback;
    PyObject *result = NULL;
    Vocabulary vocabulary;
    Entries entries = {0};
    Py_ssize_t num_sentences, sentence;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!OOO!O!OO:read_columns", &PyList_Type, &token_lists, &lower_lists, &reads,
                          &PyDict_Type, &vocabulary.by_name, &PyDict_Type, &vocabulary.by_key, &names, &fallback))
        return NULL;
    num_sentences = PyList_Size(token_lists);
    if ((lower_lists != Py_None && (!PyList_Check(lower_lists) || PyList_Size(lower_lists) != num_sentences
                                    || !PyUnicode_Check(reads)))
        || (names != Py_None && !PyList_Check(names))) {
        PyErr_SetString(PyExc_TypeError, "lower_lists must be None or a list as long as token_lists (with reads "
                                         "a str), and names None or a list");
        return NULL;
    }
    vocabulary.names = names == Py_None ? NULL : names;
    if ((vocabulary.separator = PyUnicode_FromString(":")) == NULL)
        return NULL;
    if (add_start(&entries) < 0)
        goto done;
    for (sentence = 0; sentence < num_sentences; sentence++) {
        PyObject *tokens = PyList_GetItem(token_lists, sentence);
        PyObject *lower = lower_lists == Py_None ? NULL : PyList_GetItem(lower_lists, sentence);
        Py_ssize_t position;
        if (!PyList_Check(tokens) || (lower != NULL && (!PyList_Check(lower)
                                                        || PyList_Size(lower) != PyList_Size(tokens)))) {
            PyErr_SetString(PyExc_TypeError, "every sentence must be a list of tokens (and of as many labels)");
            goto done;
        }
        /* the fallback runs Python code, which may change the lists: their sizes are read again */
        for (position = 0; position < PyList_Size(tokens); position++) {
            PyObject *label = NULL;
            if (lower != NULL && (label = PyList_GetItem(lower, position)) == NULL)
                goto done;
            if (read_token(&entries, &vocabulary, PyList_GetItem(tokens, position), label, reads, fallback, sentence,
                           position) < 0)
                goto done;
        }
    }
    result = Py_BuildValue("(NNN)", as_bytearray(entries.columns, entries.size, sizeof(int64_t)),
                           as_bytearray(entries.values, entries.size, sizeof(double)),
                           as_bytearray(entries.starts, entries.num_starts, sizeof(int64_t)));
done:
    Py_DECREF(vocabulary.separator);
    free(entries.columns);
    free(entries.values);
    free(entries.starts);
    return result;
}

/* ft_tag_entries, called through its address in fstcrf._kernel (see tag_tokens). */
typedef int (*tag_entries_function)(const ft_tagger *, const fc_scores *, ft_tag_buffers *, int64_t, int32_t,
                                    const int64_t *, const int64_t *, const int64_t *, const double *,
                                    const int32_t *, int32_t *, double *);

PyDoc_STRVAR(tag_tokens_doc,
"tag_tokens(tokens, by_name, by_key, fallback, state_names, kernel)\n"
"\n"
"The best labels of one sentence of token dicts, lists or tuples of names, read\n"
"as read_columns reads them (one sentence, no lower labels) and tagged by\n"
"ft_tag_entries in the same call: a list of state_names[state], one per token.\n"
"kernel: the addresses (ints) of ft_tag_entries, the ft_tagger, the fc_scores,\n"
"the calling thread's ft_tag_buffers and its path int32 and score float64\n"
"arrays, which the call overwrites; the caller keeps them alive.  None when the\n"
"call does not take the sentence: no tokens, a token of another type than\n"
"exactly dict, list or tuple (checked before any is read), more tokens or\n"
"entries than the buffers hold, or a kernel status other than FC_OK or a\n"
"best score that is not finite (the caller's general path says what is\n"
"wrong).  A bad token raises what the fallback raises.  The GIL is released\n"
"while the kernel runs.");

static PyObject *tag_tokens(PyObject *module, PyObject *args)
{
    PyObject *tokens, *fallback, *state_names, *labels = NULL;
    Vocabulary vocabulary = {NULL, NULL, NULL, NULL};
    unsigned long long address[6];
    Entries entries = {0};
    Py_ssize_t num_tokens, position;
    int status;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!O!O!OO!(KKKKKK):tag_tokens", &PyList_Type, &tokens, &PyDict_Type,
                          &vocabulary.by_name, &PyDict_Type, &vocabulary.by_key, &fallback, &PyList_Type,
                          &state_names, &address[0], &address[1], &address[2], &address[3], &address[4],
                          &address[5]))
        return NULL;
    tag_entries_function tag = (tag_entries_function)(uintptr_t)address[0];
    const ft_tagger *tagger = (const ft_tagger *)(uintptr_t)address[1];
    const fc_scores *scores = (const fc_scores *)(uintptr_t)address[2];
    ft_tag_buffers *buffers = (ft_tag_buffers *)(uintptr_t)address[3];
    int32_t *path = (int32_t *)(uintptr_t)address[4];
    double *score = (double *)(uintptr_t)address[5];
    num_tokens = PyList_Size(tokens);
    for (position = 0; position < num_tokens; position++) {
        PyObject *token = PyList_GetItem(tokens, position);
        if (!PyDict_CheckExact(token) && !PyList_CheckExact(token) && !PyTuple_CheckExact(token))
            Py_RETURN_NONE;
    }
    if (num_tokens == 0 || num_tokens > buffers->max_tokens || num_tokens > buffers->workspace->t_max)
        Py_RETURN_NONE;
    if (add_start(&entries) < 0)
        goto done;
    for (position = 0; position < num_tokens && PyList_Size(tokens) == num_tokens; position++)
        if (read_token(&entries, &vocabulary, PyList_GetItem(tokens, position), NULL, Py_None, fallback, 0,
                       position) < 0)
            goto done;
    /* the fallback runs Python code, which may have changed the list */
    if (PyList_Size(tokens) != num_tokens || entries.size > buffers->max_entries) {
        labels = Py_NewRef(Py_None);
        goto done;
    }
    {
        const int64_t offsets[2] = {0, num_tokens};
        Py_BEGIN_ALLOW_THREADS
        status = tag(tagger, scores, buffers, num_tokens, 1, offsets, entries.starts, entries.columns,
                     entries.values, NULL, path, score);
        Py_END_ALLOW_THREADS
    }
    if (status != FC_OK || !isfinite(score[0])) {
        labels = Py_NewRef(Py_None);
        goto done;
    }
    if ((labels = PyList_New(num_tokens)) == NULL)
        goto done;
    for (position = 0; position < num_tokens; position++) {
        PyObject *name = PyList_GetItem(state_names, path[position]);      /* borrowed; IndexError: a bug */
        if (name == NULL) {
            Py_CLEAR(labels);
            goto done;
        }
        Py_INCREF(name);
        PyList_SetItem(labels, position, name);
    }
done:
    free(entries.columns);
    free(entries.values);
    free(entries.starts);
    if (labels == NULL && !PyErr_Occurred())
        PyErr_SetString(PyExc_RuntimeError, "tag_tokens failed without an error");
    return labels;
}

PyDoc_STRVAR(values_by_key_doc,
"values_by_key(vocabulary, separator)\n"
"\n"
"key -> {value: column} for every name 'key<separator>value' of vocabulary (a dict\n"
"str -> column), split at each of its separators in turn (a name holding two\n"
"has two entries), so that a token's pair (key, value) is found without\n"
"joining the two.");

static PyObject *values_by_key(PyObject *module, PyObject *args)
{
    PyObject *vocabulary, *name, *column, *table;
    Py_ssize_t place = 0;
    Py_UCS4 separator;
    int separator_code;
    (void)module;
    if (!PyArg_ParseTuple(args, "O!C:values_by_key", &PyDict_Type, &vocabulary, &separator_code))
        return NULL;
    separator = (Py_UCS4)separator_code;
    if ((table = PyDict_New()) == NULL)
        return NULL;
    while (PyDict_Next(vocabulary, &place, &name, &column)) {
        Py_ssize_t length, at = 0;
        if (!PyUnicode_Check(name)) {
            PyErr_SetString(PyExc_TypeError, "vocabulary names must be str");
            goto failed;
        }
        length = PyUnicode_GetLength(name);
        while ((at = PyUnicode_FindChar(name, separator, at, length, 1)) >= 0) {
            PyObject *key = PyUnicode_Substring(name, 0, at);
            PyObject *value = key == NULL ? NULL : PyUnicode_Substring(name, at + 1, length);
            int status = value == NULL ? -1 : put_split(table, key, value, column);
            Py_XDECREF(key);
            Py_XDECREF(value);
            if (status < 0)
                goto failed;
            at++;
        }
        if (at == -2)
            goto failed;
    }
    return table;
failed:
    Py_DECREF(table);
    return NULL;
}

static PyMethodDef methods[] = {
    {"read_columns", read_columns, METH_VARARGS, read_columns_doc},
    {"values_by_key", values_by_key, METH_VARARGS, values_by_key_doc},
    {"tag_tokens", tag_tokens, METH_VARARGS, tag_tokens_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "fstcrf._attributes",
    "The columns of CRFsuite-style token dicts, read in C (see fstcrf/attributes.py).",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__attributes(void)
{
    return PyModule_Create(&module_definition);
}
