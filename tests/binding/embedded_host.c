/* A host program that embeds CPython the way applications do (tests/binding/test_embedded_host.py):
 *   embedded_host CODE ROUNDS        initialise the interpreter, run CODE, finalise it; ROUNDS times in one process
 *   embedded_host CODE ROUNDS sub    initialise once, run CODE in ROUNDS sub-interpreters one after the other
 *                                    (Py_NewInterpreter / Py_EndInterpreter), then finalise */
#include <Python.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int run_in_subinterpreters(const char* code, int rounds) {
    Py_Initialize();
    PyThreadState* main_state = PyThreadState_Get();
    for (int i = 0; i < rounds; ++i) {
        PyThreadState* sub = Py_NewInterpreter();
        if (sub == NULL)
            return 3;
        const int ran = PyRun_SimpleString(code);
        Py_EndInterpreter(sub);
        PyThreadState_Swap(main_state);
        printf("HOST sub-interpreter %d: run %d\n", i, ran);
        fflush(stdout);
        if (ran != 0)
            return 10 + i;
    }
    return Py_FinalizeEx() < 0 ? 120 : 0;
}

int main(int argc, char** argv) {
    if (argc < 3)
        return 2;
    const int rounds = atoi(argv[2]);
    if (argc > 3 && strcmp(argv[3], "sub") == 0)
        return run_in_subinterpreters(argv[1], rounds);
    for (int i = 0; i < rounds; ++i) {
        Py_Initialize();
        const int ran = PyRun_SimpleString(argv[1]);
        const int finalized = Py_FinalizeEx();
        printf("HOST round %d: run %d finalize %d\n", i, ran, finalized);
        fflush(stdout);
        if (ran != 0)
            return 10 + i;
        if (finalized < 0)
            return 120;
    }
    return 0;
}
