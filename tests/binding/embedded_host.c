/* A host program that embeds CPython the way applications do: initialise the interpreter, run the code given as
 * argv[1], finalise it; argv[2] times in one process (tests/binding/test_embedded_host.py). */
#include <Python.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
    if (argc < 3)
        return 2;
    const int rounds = atoi(argv[2]);
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
