/* fxla.runtime._fastcall: the call of a compiled signature, made from C.

   A Dispatch is what calling a CompiledModule runs (fxla.compile.CompiledModule.__call__).  It holds the module's
   call plans (a dict from the plan key of a positional call to its plan; see fxla.dispatch) and the general call
   path.  A call does, without a Python frame:

     key  = (type(a), a.shape, a.dtype)           one positional argument
          = ((type(a), a.shape, a.dtype), ...)    several, or none: () (fxla.dispatch.fast_key)
     plan = plans.get(key)                        none, or keyword arguments: general(*args, **kwargs)
     plan.host   = HostCall(run, params, views, build, grad):
                   torch tensors in and out (views: (dtype, shape) per result):
                   torch autocast enabled (torch._C._is_any_autocast_enabled()), forward-mode AD active
                   (torch.autograd.forward_ad._current_level >= 0), or grad is True and
                   torch.is_grad_enabled(): return plan(args) (the plan refuses autocast, fxla.autocast, and dual
                   tensors, and gives the outputs autograd's behaviour, fxla.gradients);
                   outs = run(*params, *[a.numpy() for a in args]);
                   for each out: out.block_until_ready(), then
                     torch.from_numpy(<writable ndarray of dtype and shape on out's buffer, keeping out alive>);
                   return build(<list of those tensors>)
                   views = None: jax results (output="jax"): each out.block_until_ready(), then build(<list of outs>)
                   (a.numpy() raising RuntimeError/TypeError -- requires_grad, another device -- or run raising
                   ValueError -- e.g. under jax.disable_jit() -- : return plan(args))
     plan.direct = DirectCall(run, params, build): jax arrays in and out: return build(run(*params, *args))
                   (run raising ValueError -- an array on another device --: return plan(args))
     otherwise:                                   return plan(args)

   Dispatch(plans, general, bypass=None, watch=None): ``watch`` (a callable or None) is called with no arguments
   before every call (bypass ones too): the module's check that its weights are still the ones its
   resident device buffers hold (fxla.compile: it re-uploads changed ones and drops the plans that held the old
   buffers, so the lookup that follows finds none and the general path rebuilds them); an exception from it
   propagates.

   Dispatch(plans, general, bypass=T): a call whose positional arguments are all exactly of type T (at least
   one) is general(*args) at once, without a key or a lookup -- how an output="jax" module puts a Dispatch over
   its torch-tensor plans in front of JAX's C++ dispatch (general) without slowing the jax-array calls that one
   runs (T: jax's array type).

   HostCall and DirectCall are the typed records of the two shortcuts (tuple subclasses with named fields, built
   by fxla.dispatch.call_plan): their constructors check their shape once -- params a tuple, views a tuple of
   (np.dtype, tuple) pairs or None, grad a bool, run and build callable -- so a call trusts them and checks
   nothing.  A bare tuple of the same shape is still accepted (hand-made plans, tests) and is checked on every
   call, with the same TypeErrors.

   The Python in fxla.dispatch builds the plans and documents what each part is for; this file only removes the
   interpreter's per-call cost from the two shortcuts (about 3 us of a 12 us call on the CPU).  Nothing here knows
   about ops or programs.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#define MAX_STACK 64 /* positional arguments handed to `run` from the C stack; more: plan(args) */

static PyTypeObject HostCallType, DirectCallType;

static PyObject *torch_from_numpy, *torch_is_grad_enabled, *torch_any_autocast;
static PyObject *forward_ad; /* torch.autograd.forward_ad: its _current_level >= 0 inside a dual_level */
static PyObject *str_shape, *str_dtype, *str_numpy, *str_current_level, *str_host, *str_direct, *str_block_until_ready,
    *str_unsafe_buffer_pointer;

typedef struct {
    PyObject_HEAD
    PyObject *plans;   /* dict: plan key -> call plan */
    PyObject *general; /* callable(*args, **kwargs): the general call path */
    PyObject *bypass;  /* NULL or a type: calls whose arguments are all exactly of it go to general at once */
    PyObject *watch;   /* NULL or a callable run before each other call (see above) */
    vectorcallfunc vectorcall;
} Dispatch;

/* The plan key of a positional call (fxla.dispatch.fast_key); NULL with no error set when an argument has no
   shape or dtype (the call is not array-like: the general path takes it). */
static PyObject *arg_key(PyObject *a) {
    PyObject *shape = PyObject_GetAttr(a, str_shape);
    if (shape == NULL)
        return NULL;
    PyObject *dtype = PyObject_GetAttr(a, str_dtype);
    if (dtype == NULL) {
        Py_DECREF(shape);
        return NULL;
    }
    PyObject *key = PyTuple_New(3);
    if (key == NULL) {
        Py_DECREF(shape);
        Py_DECREF(dtype);
        return NULL;
    }
    Py_INCREF(Py_TYPE(a));
    PyTuple_SET_ITEM(key, 0, (PyObject *)Py_TYPE(a));
    PyTuple_SET_ITEM(key, 1, shape);
    PyTuple_SET_ITEM(key, 2, dtype);
    return key;
}

static PyObject *call_key(PyObject *const *args, Py_ssize_t nargs) {
    if (nargs == 1)
        return arg_key(args[0]);
    PyObject *key = PyTuple_New(nargs);
    if (key == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        PyObject *k = arg_key(args[i]);
        if (k == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SET_ITEM(key, i, k);
    }
    return key;
}

/* run(*params, *args) from the C stack; NULL with no error set when there are too many to hold there. */
static PyObject *run_with(PyObject *run, PyObject *params, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *stack[MAX_STACK];
    Py_ssize_t np = PyTuple_GET_SIZE(params);
    if (np + nargs > MAX_STACK)
        return NULL;
    for (Py_ssize_t i = 0; i < np; i++)
        stack[i] = PyTuple_GET_ITEM(params, i);
    for (Py_ssize_t i = 0; i < nargs; i++)
        stack[np + i] = args[i];
    return PyObject_Vectorcall(run, stack, (size_t)(np + nargs), NULL);
}

/* A writable ndarray of `dtype` and `shape` on `out`'s CPU buffer, keeping `out` alive (nothing else refers to
   a program's result buffer, so writing to it is safe). */
static PyObject *writable_view(PyObject *out, PyObject *dtype, PyObject *shape) {
    npy_intp dims[NPY_MAXDIMS];
    Py_ssize_t nd = PyTuple_GET_SIZE(shape);
    if (nd > NPY_MAXDIMS) {
        PyErr_SetString(PyExc_ValueError, "fxla: a result of more than NPY_MAXDIMS dimensions has no host view");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nd; i++) {
        dims[i] = (npy_intp)PyLong_AsSsize_t(PyTuple_GET_ITEM(shape, i));
        if (dims[i] == -1 && PyErr_Occurred())
            return NULL;
    }
    PyObject *pointer = PyObject_CallMethodNoArgs(out, str_unsafe_buffer_pointer);
    if (pointer == NULL)
        return NULL;
    void *data = PyLong_AsVoidPtr(pointer);
    Py_DECREF(pointer);
    if (data == NULL && PyErr_Occurred())
        return NULL;
    Py_INCREF(dtype); /* stolen by PyArray_NewFromDescr */
    PyObject *array = PyArray_NewFromDescr(&PyArray_Type, (PyArray_Descr *)dtype, (int)nd, dims, NULL, data,
                                           NPY_ARRAY_CARRAY, NULL);
    if (array == NULL)
        return NULL;
    Py_INCREF(out);
    if (PyArray_SetBaseObject((PyArrayObject *)array, out) < 0) { /* steals `out` */
        Py_DECREF(array);
        return NULL;
    }
    return array;
}

/* -- the typed shortcuts: HostCall and DirectCall ------------------------------------------------------------ */

/* 0 when items[0..n) are a valid plan.host, else -1 with a TypeError set. */
static int check_host(PyObject *const *items, Py_ssize_t n) {
    if (n != 5 || !PyBool_Check(items[4])) {
        PyErr_SetString(PyExc_TypeError, "fxla: plan.host must be (run, params, views, build, grad: bool)");
        return -1;
    }
    PyObject *params = items[1], *views = items[2];
    if (!PyTuple_CheckExact(params) || (views != Py_None && !PyTuple_CheckExact(views))) {
        PyErr_SetString(PyExc_TypeError, "fxla: plan.host must be (run, params: tuple, views: tuple or None, build)");
        return -1;
    }
    Py_ssize_t nviews = views == Py_None ? 0 : PyTuple_GET_SIZE(views);
    for (Py_ssize_t i = 0; i < nviews; i++) {
        PyObject *view = PyTuple_GET_ITEM(views, i);
        if (!PyTuple_CheckExact(view) || PyTuple_GET_SIZE(view) != 2 || !PyArray_DescrCheck(PyTuple_GET_ITEM(view, 0))
            || !PyTuple_CheckExact(PyTuple_GET_ITEM(view, 1))) {
            PyErr_SetString(PyExc_TypeError, "fxla: plan.host's views must be (dtype: np.dtype, shape: tuple) pairs");
            return -1;
        }
    }
    return 0;
}

/* 0 when items[0..n) are a valid plan.direct, else -1 with a TypeError set. */
static int check_direct(PyObject *const *items, Py_ssize_t n) {
    if (n != 3 || !PyTuple_CheckExact(items[1])) {
        PyErr_SetString(PyExc_TypeError, "fxla: plan.direct must be (run, params: tuple, build)");
        return -1;
    }
    return 0;
}

/* "HostCall" for fxla.runtime._fastcall.HostCall */
static const char *short_name(PyTypeObject *type) {
    const char *dot = strrchr(type->tp_name, '.');
    return dot == NULL ? type->tp_name : dot + 1;
}

static const char *host_fields[] = {"run", "params", "views", "build", "grad", NULL};
static const char *direct_fields[] = {"run", "params", "build", NULL};

/* A record of `type` (a tuple subclass) holding args[0..n), checked by `check`; `fields`: its field names
   (run and build must be callable). */
static PyObject *record_new(PyTypeObject *type, PyObject *args, PyObject *kwargs, const char **fields,
                            int (*check)(PyObject *const *, Py_ssize_t)) {
    PyObject *items[5];
    Py_ssize_t n = 0;
    while (fields[n] != NULL)
        n++;
    if (PyTuple_GET_SIZE(args) > n) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd fields, got %zd", short_name(type), n, PyTuple_GET_SIZE(args));
        return NULL;
    }
    Py_ssize_t nkw = kwargs == NULL ? 0 : PyDict_GET_SIZE(kwargs);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *kw = kwargs == NULL ? NULL : PyDict_GetItemString(kwargs, fields[i]); /* borrowed */
        if (i < PyTuple_GET_SIZE(args)) {
            if (kw != NULL) {
                PyErr_Format(PyExc_TypeError, "%s got field %s twice", short_name(type), fields[i]);
                return NULL;
            }
            items[i] = PyTuple_GET_ITEM(args, i);
        } else if (kw != NULL) {
            items[i] = kw;
            nkw--;
        } else {
            PyErr_Format(PyExc_TypeError, "%s is missing its field %s", short_name(type), fields[i]);
            return NULL;
        }
    }
    if (nkw != 0) {
        PyErr_Format(PyExc_TypeError, "%s takes the fields %s, ...: got an unknown one", short_name(type), fields[0]);
        return NULL;
    }
    if (check(items, n) < 0)
        return NULL;
    if (!PyCallable_Check(items[0]) || !PyCallable_Check(items[n == 5 ? 3 : 2])) {
        PyErr_Format(PyExc_TypeError, "%s: run and build must be callable", short_name(type));
        return NULL;
    }
    PyObject *self = type->tp_alloc(type, n);
    if (self == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(items[i]);
        PyTuple_SET_ITEM(self, i, items[i]);
    }
    return self;
}

static PyObject *host_call_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    return record_new(type, args, kwargs, host_fields, check_host);
}

static PyObject *direct_call_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    return record_new(type, args, kwargs, direct_fields, check_direct);
}

static PyObject *record_field(PyObject *self, void *index) {
    PyObject *value = PyTuple_GET_ITEM(self, (Py_ssize_t)index);
    Py_INCREF(value);
    return value;
}

static PyObject *record_repr(PyObject *self) {
    const char **fields = Py_IS_TYPE(self, &HostCallType) ? host_fields : direct_fields;
    PyObject *parts = PyList_New(0);
    if (parts == NULL)
        return NULL;
    for (Py_ssize_t i = 0; fields[i] != NULL; i++) {
        PyObject *part = PyUnicode_FromFormat("%s=%R", fields[i], PyTuple_GET_ITEM(self, i));
        if (part == NULL || PyList_Append(parts, part) < 0) {
            Py_XDECREF(part);
            Py_DECREF(parts);
            return NULL;
        }
        Py_DECREF(part);
    }
    PyObject *sep = PyUnicode_FromString(", ");
    PyObject *joined = sep == NULL ? NULL : PyUnicode_Join(sep, parts);
    Py_XDECREF(sep);
    Py_DECREF(parts);
    if (joined == NULL)
        return NULL;
    PyObject *result = PyUnicode_FromFormat("%s(%U)", short_name(Py_TYPE(self)), joined);
    Py_DECREF(joined);
    return result;
}

#define FIELD(name, index, doc) {name, (getter)record_field, NULL, doc, (void *)(Py_ssize_t)(index)}
static PyGetSetDef host_call_fields[] = {
    FIELD("run", 0, "the compiled program's C++ call: run(*params, *arrays) -> list of jax arrays"),
    FIELD("params", 1, "tuple: the resident parameters, passed first"),
    FIELD("views", 2, "tuple of (np.dtype, shape tuple) per result: its zero-copy host view; None: jax results"),
    FIELD("build", 3, "callable(list of results) -> the call's return value"),
    FIELD("grad", 4, "bool: the program reads a float parameter, which may require grad (grad mode on: the plan runs)"),
    {NULL},
};
static PyGetSetDef direct_call_fields[] = {
    FIELD("run", 0, "the compiled program's C++ call: run(*params, *arrays) -> list of jax arrays"),
    FIELD("params", 1, "tuple: the resident parameters, passed first"),
    FIELD("build", 2, "callable(list of results) -> the call's return value"),
    {NULL},
};
#undef FIELD

static PyTypeObject HostCallType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fxla.runtime._fastcall.HostCall",
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "HostCall(run, params, views, build, grad): plan.host, the torch-in shortcut of a call plan (a tuple "
              "checked once, when made; see fxla.dispatch.call_plan).",
    .tp_new = host_call_new,
    .tp_repr = record_repr,
    .tp_getset = host_call_fields,
};

static PyTypeObject DirectCallType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fxla.runtime._fastcall.DirectCall",
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "DirectCall(run, params, build): plan.direct, the jax-arrays-in-and-out shortcut of a call plan (a "
              "tuple checked once, when made; see fxla.dispatch.call_plan).",
    .tp_new = direct_call_new,
    .tp_repr = record_repr,
    .tp_getset = direct_call_fields,
};

/* -- the call ------------------------------------------------------------------------------------------------ */

/* plan.host: torch tensors in and out.  NULL with no error set: the plan takes the call. */
static PyObject *host_call(PyObject *host, PyObject *const *args, Py_ssize_t nargs) {
    if (!Py_IS_TYPE(host, &HostCallType)) { /* a bare tuple: checked on every call */
        if (!PyTuple_CheckExact(host)) {
            PyErr_SetString(PyExc_TypeError, "fxla: plan.host must be (run, params, views, build, grad: bool)");
            return NULL;
        }
        if (check_host(&PyTuple_GET_ITEM(host, 0), PyTuple_GET_SIZE(host)) < 0)
            return NULL;
    }
    PyObject *run = PyTuple_GET_ITEM(host, 0), *params = PyTuple_GET_ITEM(host, 1);
    PyObject *views = PyTuple_GET_ITEM(host, 2), *build = PyTuple_GET_ITEM(host, 3);
    PyObject *autocast = PyObject_CallNoArgs(torch_any_autocast); /* the plan raises AutocastError */
    if (autocast == NULL)
        return NULL;
    Py_DECREF(autocast);
    if (autocast == Py_True)
        return NULL;
    PyObject *level = PyObject_GetAttr(forward_ad, str_current_level); /* the plan refuses a dual tensor */
    if (level == NULL)
        return NULL;
    long dual_level = PyLong_AsLong(level);
    Py_DECREF(level);
    if (dual_level == -1 && PyErr_Occurred())
        return NULL;
    if (dual_level >= 0)
        return NULL;
    if (PyTuple_GET_ITEM(host, 4) == Py_True) { /* parameters require grad: with grad mode on, the plan's */
        PyObject *enabled = PyObject_CallNoArgs(torch_is_grad_enabled);
        if (enabled == NULL)
            return NULL;
        Py_DECREF(enabled);
        if (enabled == Py_True)
            return NULL;
    }
    int as_jax = views == Py_None; /* output="jax": the results themselves, once computed */
    Py_ssize_t nviews = as_jax ? 0 : PyTuple_GET_SIZE(views);
    if (PyTuple_GET_SIZE(params) + nargs > MAX_STACK)
        return NULL;
    PyObject *values[MAX_STACK];
    Py_ssize_t converted = 0;
    PyObject *outs = NULL, *tensors = NULL, *result = NULL;
    for (; converted < nargs; converted++) {
        values[converted] = PyObject_CallMethodNoArgs(args[converted], str_numpy);
        if (values[converted] == NULL) {
            if (PyErr_ExceptionMatches(PyExc_RuntimeError) || PyErr_ExceptionMatches(PyExc_TypeError))
                PyErr_Clear(); /* requires_grad, another device, bfloat16: the plan converts it */
            goto done;
        }
    }
    outs = run_with(run, params, values, nargs);
    if (outs == NULL) {
        if (PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_ValueError))
            PyErr_Clear(); /* e.g. under jax.disable_jit(): the plan runs it another way */
        goto done;
    }
    if (!PyList_CheckExact(outs) && !PyTuple_CheckExact(outs)) {
        PyErr_SetString(PyExc_TypeError, "fxla: a host plan's run must return a list or tuple of arrays");
        goto done;
    }
    if (as_jax)
        nviews = PySequence_Fast_GET_SIZE(outs);
    else if (PySequence_Fast_GET_SIZE(outs) != nviews) {
        PyErr_Format(PyExc_TypeError, "fxla: a host plan's run returned %zd results for %zd views",
                     PySequence_Fast_GET_SIZE(outs), nviews);
        goto done;
    }
    tensors = PyList_New(nviews);
    if (tensors == NULL)
        goto done;
    for (Py_ssize_t i = 0; i < nviews; i++) {
        PyObject *out = PySequence_Fast_GET_ITEM(outs, i); /* borrowed */
        /* the caller may change its tensors once this returns (the program may still be reading them), and
           a view must hold the value */
        PyObject *ready = PyObject_CallMethodNoArgs(out, str_block_until_ready);
        if (ready == NULL)
            goto done;
        Py_DECREF(ready);
        if (as_jax) {
            Py_INCREF(out);
            PyList_SET_ITEM(tensors, i, out);
            continue;
        }
        PyObject *view = PyTuple_GET_ITEM(views, i);
        PyObject *array = writable_view(out, PyTuple_GET_ITEM(view, 0), PyTuple_GET_ITEM(view, 1));
        if (array == NULL)
            goto done;
        PyObject *tensor = PyObject_CallOneArg(torch_from_numpy, array);
        Py_DECREF(array);
        if (tensor == NULL)
            goto done;
        PyList_SET_ITEM(tensors, i, tensor);
    }
    result = PyObject_CallOneArg(build, tensors);
done:
    for (Py_ssize_t i = 0; i < converted; i++)
        Py_DECREF(values[i]);
    Py_XDECREF(outs);
    Py_XDECREF(tensors);
    return result;
}

/* plan.direct: jax arrays in and out.  NULL with no error set: the plan takes the call. */
static PyObject *direct_call(PyObject *direct, PyObject *const *args, Py_ssize_t nargs) {
    if (!Py_IS_TYPE(direct, &DirectCallType)) { /* a bare tuple: checked on every call */
        if (!PyTuple_CheckExact(direct)) {
            PyErr_SetString(PyExc_TypeError, "fxla: plan.direct must be (run, params: tuple, build)");
            return NULL;
        }
        if (check_direct(&PyTuple_GET_ITEM(direct, 0), PyTuple_GET_SIZE(direct)) < 0)
            return NULL;
    }
    PyObject *outs = run_with(PyTuple_GET_ITEM(direct, 0), PyTuple_GET_ITEM(direct, 1), args, nargs);
    if (outs == NULL) {
        if (PyErr_Occurred() && PyErr_ExceptionMatches(PyExc_ValueError))
            PyErr_Clear(); /* an array on another device, jax.disable_jit() */
        return NULL;
    }
    PyObject *result = PyObject_CallOneArg(PyTuple_GET_ITEM(direct, 2), outs);
    Py_DECREF(outs);
    return result;
}

/* host_view(array, dtype, shape): the Python face of writable_view (fxla.runtime.buffers.cpu_view). */
static PyObject *host_view(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyArray_DescrCheck(args[1]) || !PyTuple_Check(args[2])) {
        PyErr_SetString(PyExc_TypeError, "host_view(array, dtype: np.dtype, shape: tuple)");
        return NULL;
    }
    return writable_view(args[0], args[1], args[2]);
}

static PyMethodDef module_methods[] = {
    {"host_view", (PyCFunction)(void (*)(void))host_view, METH_FASTCALL,
     "host_view(array, dtype, shape) -> a writable ndarray on a computed single-device CPU jax.Array's buffer, "
     "which it keeps alive (the caller waits for the value first)."},
    {NULL},
};

static PyObject *call_plan(PyObject *plan, PyObject *const *args, Py_ssize_t nargs) {
    PyObject *tuple = PyTuple_New(nargs);
    if (tuple == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) {
        Py_INCREF(args[i]);
        PyTuple_SET_ITEM(tuple, i, args[i]);
    }
    PyObject *result = PyObject_CallOneArg(plan, tuple);
    Py_DECREF(tuple);
    return result;
}

static PyObject *dispatch_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Dispatch *self = (Dispatch *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (self->plans == NULL || self->general == NULL) { /* cleared by the garbage collector */
        PyErr_SetString(PyExc_RuntimeError, "fxla: this call path belongs to a collected CompiledModule");
        return NULL;
    }
    if (self->watch != NULL) {
        PyObject *checked = PyObject_CallNoArgs(self->watch);
        if (checked == NULL)
            return NULL;
        Py_DECREF(checked);
    }
    if (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)
        return PyObject_Vectorcall(self->general, args, nargsf, kwnames);
    if (self->bypass != NULL && nargs > 0) {
        Py_ssize_t i = 0;
        while (i < nargs && (PyObject *)Py_TYPE(args[i]) == self->bypass)
            i++;
        if (i == nargs)
            return PyObject_Vectorcall(self->general, args, nargsf, kwnames);
    }
    PyObject *key = call_key(args, nargs);
    if (key == NULL) {
        if (!PyErr_ExceptionMatches(PyExc_AttributeError))
            return NULL;
        PyErr_Clear();
        return PyObject_Vectorcall(self->general, args, nargsf, kwnames);
    }
    PyObject *plan = PyDict_GetItemWithError(self->plans, key); /* borrowed */
    Py_DECREF(key);
    if (plan == NULL) {
        if (PyErr_Occurred()) /* an unhashable shape or dtype: the general path reports what it is */
            PyErr_Clear();
        return PyObject_Vectorcall(self->general, args, nargsf, kwnames);
    }
    Py_INCREF(plan);
    PyObject *result = NULL;
    PyObject *host = PyObject_GetAttr(plan, str_host);
    if (host == NULL)
        goto done;
    if (host != Py_None) {
        result = host_call(host, args, nargs);
        Py_DECREF(host);
        if (result != NULL || PyErr_Occurred())
            goto done;
    } else {
        Py_DECREF(host);
        PyObject *direct = PyObject_GetAttr(plan, str_direct);
        if (direct == NULL)
            goto done;
        if (direct != Py_None) {
            result = direct_call(direct, args, nargs);
            Py_DECREF(direct);
            if (result != NULL || PyErr_Occurred())
                goto done;
        } else {
            Py_DECREF(direct);
        }
    }
    result = call_plan(plan, args, nargs);
done:
    Py_DECREF(plan);
    return result;
}

static PyObject *dispatch_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names[] = {"plans", "general", "bypass", "watch", NULL};
    PyObject *plans, *general, *bypass = Py_None, *watch = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O|OO:Dispatch", names, &PyDict_Type, &plans, &general, &bypass,
                                     &watch))
        return NULL;
    if (watch != Py_None && !PyCallable_Check(watch)) {
        PyErr_SetString(PyExc_TypeError, "Dispatch: watch must be callable or None");
        return NULL;
    }
    if (bypass != Py_None && !PyType_Check(bypass)) {
        PyErr_SetString(PyExc_TypeError, "Dispatch: bypass must be a type or None");
        return NULL;
    }
    if (!PyCallable_Check(general)) {
        PyErr_SetString(PyExc_TypeError, "Dispatch: general must be callable");
        return NULL;
    }
    Dispatch *self = (Dispatch *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    Py_INCREF(plans);
    Py_INCREF(general);
    self->plans = plans;
    self->general = general;
    self->bypass = bypass == Py_None ? NULL : bypass;
    Py_XINCREF(self->bypass);
    self->watch = watch == Py_None ? NULL : watch;
    Py_XINCREF(self->watch);
    self->vectorcall = dispatch_vectorcall;
    return (PyObject *)self;
}

static int dispatch_traverse(Dispatch *self, visitproc visit, void *arg) {
    Py_VISIT(self->plans);
    Py_VISIT(self->general);
    Py_VISIT(self->bypass);
    Py_VISIT(self->watch);
    return 0;
}

static int dispatch_clear(Dispatch *self) {
    Py_CLEAR(self->plans);
    Py_CLEAR(self->general);
    Py_CLEAR(self->bypass);
    Py_CLEAR(self->watch);
    return 0;
}

static void dispatch_dealloc(Dispatch *self) {
    PyObject_GC_UnTrack(self);
    dispatch_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMemberDef dispatch_members[] = {
    {"plans", T_OBJECT, offsetof(Dispatch, plans), READONLY, "the call plans, by plan key"},
    {"general", T_OBJECT, offsetof(Dispatch, general), READONLY, "the general call path"},
    {"bypass", T_OBJECT, offsetof(Dispatch, bypass), READONLY,
     "None, or the type whose calls (every argument exactly of it) go to general without a lookup"},
    {"watch", T_OBJECT, offsetof(Dispatch, watch), READONLY, "None, or what each other call runs first"},
    {NULL},
};

static PyTypeObject DispatchType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "fxla.runtime._fastcall.Dispatch",
    .tp_basicsize = sizeof(Dispatch),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "Dispatch(plans, general, bypass=None, watch=None): calls a compiled module's plans from C (see the module's source).",
    .tp_new = dispatch_new,
    .tp_dealloc = (destructor)dispatch_dealloc,
    .tp_traverse = (traverseproc)dispatch_traverse,
    .tp_clear = (inquiry)dispatch_clear,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Dispatch, vectorcall),
    .tp_members = dispatch_members,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "fxla.runtime._fastcall",
    "The call of a compiled signature made from C (see Dispatch and fxla.dispatch).", -1, module_methods,
};

PyMODINIT_FUNC PyInit__fastcall(void) {
    import_array();
    PyObject *torch = PyImport_ImportModule("torch");
    if (torch == NULL)
        return NULL;
    torch_from_numpy = PyObject_GetAttrString(torch, "from_numpy");
    torch_is_grad_enabled = PyObject_GetAttrString(torch, "is_grad_enabled");
    PyObject *torch_c = PyObject_GetAttrString(torch, "_C");
    Py_DECREF(torch);
    if (torch_c == NULL)
        return NULL;
    torch_any_autocast = PyObject_GetAttrString(torch_c, "_is_any_autocast_enabled");
    Py_DECREF(torch_c);
    forward_ad = PyImport_ImportModule("torch.autograd.forward_ad");
    if (torch_from_numpy == NULL || torch_is_grad_enabled == NULL || torch_any_autocast == NULL || forward_ad == NULL)
        return NULL;
#define INTERN(var, text)                                                                                          \
    if ((var = PyUnicode_InternFromString(text)) == NULL)                                                          \
        return NULL;
    INTERN(str_shape, "shape");
    INTERN(str_dtype, "dtype");
    INTERN(str_numpy, "numpy");
    INTERN(str_current_level, "_current_level");
    INTERN(str_host, "host");
    INTERN(str_direct, "direct");
    INTERN(str_block_until_ready, "block_until_ready");
    INTERN(str_unsafe_buffer_pointer, "unsafe_buffer_pointer");
#undef INTERN
    HostCallType.tp_base = &PyTuple_Type;
    DirectCallType.tp_base = &PyTuple_Type;
    if (PyType_Ready(&DispatchType) < 0 || PyType_Ready(&HostCallType) < 0 || PyType_Ready(&DirectCallType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&DispatchType);
    if (PyModule_AddObject(m, "Dispatch", (PyObject *)&DispatchType) < 0) {
        Py_DECREF(&DispatchType);
        Py_DECREF(m);
        return NULL;
    }
    if (PyModule_AddType(m, &HostCallType) < 0 || PyModule_AddType(m, &DirectCallType) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
