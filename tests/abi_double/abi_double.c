/*
 * abi_double.c -- a deterministic C test double of the OpenVINO GenAI C ABI (LLM side, 83 functions,
 * vlm_pipeline.h, 13 more, and whisper_generation_config.h + whisper_pipeline.h, 57 more).
 *
 * Implements every function declared in cdefs/0*.h with the same names, signatures, status codes,
 * ownership rules and two-call string sizing, so the Python binding can be tested without OpenVINO.
 * Extra exported "ovd_*" control functions (declared in controls.h) let tests inject faults and observe
 * handles, threads and callbacks.
 *
 * Plain C11 + pthreads, no other dependency.  Build: cc -std=c11 -Wall -Wextra -shared -fPIC -O1 -g -pthread.
 *
 * Documented choices (where the brief left room):
 *  - ov_genai_json_container_create() makes an empty OBJECT ("{}").
 *  - JSON objects keep insertion order; a duplicate key while parsing replaces the value in place.
 *    Numbers: integer literals that fit int64 stay integers, the rest are doubles (printed shortest
 *    round-trip, with ".0" added to integral doubles, non-finite as null).  Strings must be valid UTF-8.
 *  - A config passed to generate with eos_token_id unset (-1) gets the pipeline's eos filled in (as
 *    upstream does) before validation.  The pipeline's default config is the C++ defaults with
 *    eos_token_id 2 (and stop_token_ids {2}), or the file <models_path>/double_generation_config.json.
 *  - Token limit: max_new_tokens if set, else max_length - num_input_tokens (upstream priority).
 *  - Stop strings: checked on the accumulated text after each token; the text is cut at the earliest
 *    match (kept if include_stop_str_in_output); only the part of the current token before the cut is
 *    streamed (text already streamed is never retracted).
 *  - echo: the results text is input + reply (the streamer only sees the reply).
 *  - Perf metrics add_in_place: token counts add up; every mean/std pair becomes the mean of the two
 *    operands weighted by how many generate calls each one already aggregates; load_time keeps left's.
 *  - CANCEL and STOP both make generate return OK; CANCEL drops the turn from the chat history.
 *  - An odd property_args_size gives INVALID_C_PARAM (-14), as upstream's C source does (the brief said -17).
 *  - Fault injection (ovd_fail) is checked after argument validation (NULL args still give -14); it
 *    applies to every non-void ABI function by its C name.  "generate_midstream" k: generate (and
 *    generate_with_history) stream k tokens, then return the status without results; if the reply has
 *    fewer than k tokens the status comes at the end; a streamer STOP/CANCEL before that wins (OK).
 *  - ovd_last_generate_status() is 0 before any generate.
 *  - VLM (vlm_pipeline.h): the same pipeline engine under other handle types (a VLM handle given to an LLM
 *    function, or the reverse, is INVALID_C_PARAM). Image tensors are read through libopenvino_c's
 *    ov_tensor_get_element_type / ov_tensor_get_shape, found in the libopenvino_c already mapped in the process
 *    (the one that made them; the double does not link it): none mapped with images given -> GENERAL_ERROR;
 *    NULL tensors -> INVALID_C_PARAM; not U8, or not rank 3/4 with 3 channels last -> UNKNOW_EXCEPTION (upstream
 *    throws, its C layer answers -17). The echo names them: "Echo: <prompt> [2 images: 32x48x3 1x16x16x3]".
 *    Thread log ops are "vlm_create", "vlm_generate", ...; live kinds "vlm_pipeline" and "vlm_results".
 *  - Whisper (whisper_generation_config.h, whisper_pipeline.h): see the comment above the Whisper section.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define EXPORT __attribute__((visibility("default")))

/* ------------------------------------------------------------------ ABI types (as in cdefs) */
typedef enum {
    OK = 0, GENERAL_ERROR = -1, NOT_IMPLEMENTED = -2, NETWORK_NOT_LOADED = -3, PARAMETER_MISMATCH = -4,
    NOT_FOUND = -5, OUT_OF_BOUNDS = -6, UNEXPECTED = -7, REQUEST_BUSY = -8, RESULT_NOT_READY = -9,
    NOT_ALLOCATED = -10, INFER_NOT_STARTED = -11, NETWORK_NOT_READ = -12, INFER_CANCELLED = -13,
    INVALID_C_PARAM = -14, UNKNOWN_C_ERROR = -15, NOT_IMPLEMENT_C_METHOD = -16, UNKNOW_EXCEPTION = -17
} ov_status_e;

typedef enum {
    OV_GENAI_JSON_CONTAINER_OK = 0, OV_GENAI_JSON_CONTAINER_INVALID_PARAM = -1,
    OV_GENAI_JSON_CONTAINER_INVALID_JSON = -2, OV_GENAI_JSON_CONTAINER_OUT_OF_BOUNDS = -3,
    OV_GENAI_JSON_CONTAINER_ERROR = -4
} ov_genai_json_container_status_e;

typedef enum {
    OV_GENAI_CHAT_HISTORY_OK = 0, OV_GENAI_CHAT_HISTORY_INVALID_PARAM = -1,
    OV_GENAI_CHAT_HISTORY_OUT_OF_BOUNDS = -2, OV_GENAI_CHAT_HISTORY_EMPTY = -3,
    OV_GENAI_CHAT_HISTORY_INVALID_JSON = -4, OV_GENAI_CHAT_HISTORY_ERROR = -5
} ov_genai_chat_history_status_e;

typedef enum { EARLY = 0, HEURISTIC = 1, NEVER = 2 } StopCriteria;

typedef enum {
    OV_GENAI_STREAMING_STATUS_RUNNING = 0, OV_GENAI_STREAMING_STATUS_STOP = 1, OV_GENAI_STREAMING_STATUS_CANCEL = 2
} ov_genai_streaming_status_e;

typedef struct {
    ov_genai_streaming_status_e (*callback_func)(const char* str, void* args);
    void* args;
} streamer_callback;

typedef struct ov_genai_json_container_opaque ov_genai_json_container;
typedef struct ov_genai_chat_history_opaque ov_genai_chat_history;
typedef struct ov_genai_generation_config_opaque ov_genai_generation_config;
typedef struct ov_genai_perf_metrics_opaque ov_genai_perf_metrics;
typedef struct ov_genai_decoded_results_opaque ov_genai_decoded_results;
typedef struct ov_genai_llm_pipeline_opaque ov_genai_llm_pipeline;
/* vlm_pipeline.h: the same structs under their own magic numbers */
typedef struct ov_genai_decoded_results_opaque ov_genai_vlm_decoded_results;
typedef struct ov_genai_llm_pipeline_opaque ov_genai_vlm_pipeline;
typedef struct ov_tensor ov_tensor_t; /* libopenvino_c's; only its functions look inside */

/* ------------------------------------------------------------------ globals */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

enum { K_PIPELINE, K_CONFIG, K_RESULTS, K_PERF, K_CHAT, K_JSON, K_VLM_PIPELINE, K_VLM_RESULTS, K_WHISPER_CONFIG,
       K_WHISPER_PIPELINE, K_WHISPER_RESULTS, K_WHISPER_CHUNK, K_COUNT };
static const char* const k_names[K_COUNT] = {"pipeline", "config", "results", "perf_metrics", "chat_history",
                                             "json_container", "vlm_pipeline", "vlm_results", "whisper_config",
                                             "whisper_pipeline", "whisper_results", "whisper_chunk"};
static atomic_long g_live[K_COUNT];

#define MAX_FAULTS 64
typedef struct { char name[96]; int status; long remaining; } fault_t;
static fault_t g_faults[MAX_FAULTS];
static int g_nfaults;
static atomic_int g_have_faults;

static char* g_reply;            /* NULL = echo */
static size_t g_chunk_bytes;     /* 0 = word tokens */
static unsigned int g_delay_us;
static char* g_tlog; static size_t g_tlog_len, g_tlog_cap;
static int g_last_cb_status = -1;
static long g_cb_count;
static long g_violations;
static char* g_last_props;
static int g_last_gen_status;
static long g_next_serial = 1;

static void* xmalloc(size_t n) { void* p = malloc(n ? n : 1); if (!p) abort(); return p; }
static void* xrealloc(void* p, size_t n) { p = realloc(p, n ? n : 1); if (!p) abort(); return p; }
static char* xstrndup(const char* s, size_t n) { char* r = xmalloc(n + 1); memcpy(r, s, n); r[n] = 0; return r; }
static char* xstrdup(const char* s) { return xstrndup(s, strlen(s)); }

static void live_inc(int k) { atomic_fetch_add(&g_live[k], 1); }
static void live_dec(int k) { atomic_fetch_sub(&g_live[k], 1); }

static long my_tid(void) { return (long)syscall(SYS_gettid); }

/* returns 0 (no fault) or the injected status */
static int injected(const char* fn) {
    if (!atomic_load(&g_have_faults)) return 0;
    int st = 0;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nfaults; i++) {
        if (strcmp(g_faults[i].name, fn) == 0) {
            if (g_faults[i].remaining > 0) g_faults[i].remaining--;
            else st = g_faults[i].status;
            break;
        }
    }
    pthread_mutex_unlock(&g_mu);
    return st;
}

/* midstream: returns 1 and sets status and k if active */
static int midstream_fault(int* status, long* k) {
    int found = 0;
    if (!atomic_load(&g_have_faults)) return 0;
    pthread_mutex_lock(&g_mu);
    for (int i = 0; i < g_nfaults; i++)
        if (strcmp(g_faults[i].name, "generate_midstream") == 0) {
            *status = g_faults[i].status; *k = g_faults[i].remaining; found = 1; break;
        }
    pthread_mutex_unlock(&g_mu);
    return found;
}

static void tlog(const char* op, long serial) {
    char line[128];
    int n = snprintf(line, sizeof line, "%s %ld %ld\n", op, serial, my_tid());
    if (n <= 0) return;
    pthread_mutex_lock(&g_mu);
    if (g_tlog_len + (size_t)n + 1 > g_tlog_cap) {
        g_tlog_cap = (g_tlog_len + (size_t)n + 1) * 2;
        g_tlog = xrealloc(g_tlog, g_tlog_cap);
    }
    memcpy(g_tlog + g_tlog_len, line, (size_t)n);
    g_tlog_len += (size_t)n;
    g_tlog[g_tlog_len] = 0;
    pthread_mutex_unlock(&g_mu);
}

/* ------------------------------------------------------------------ string builder */
typedef struct { char* p; size_t n, cap; } sb_t;
static void sb_put(sb_t* b, const char* s, size_t n) {
    if (b->n + n + 1 > b->cap) { b->cap = (b->n + n + 1) * 2 + 16; b->p = xrealloc(b->p, b->cap); }
    memcpy(b->p + b->n, s, n); b->n += n; b->p[b->n] = 0;
}
static void sb_puts(sb_t* b, const char* s) { sb_put(b, s, strlen(s)); }
static void sb_putc(sb_t* b, char c) { sb_put(b, &c, 1); }
static char* sb_take(sb_t* b) { if (!b->p) return xstrdup(""); return b->p; }

/* ------------------------------------------------------------------ JSON values */
typedef enum { JNULL, JBOOL, JINT, JUINT, JDBL, JSTR, JARR, JOBJ } jtype;
typedef struct jv {
    jtype t;
    int b; long long i; unsigned long long u; double d;
    char* s; size_t slen;                  /* JSTR */
    struct jv** items; size_t n, cap;      /* JARR / JOBJ values */
    char** keys; size_t* klens;            /* JOBJ keys */
} jv;

static jv* jv_new(jtype t) { jv* v = xmalloc(sizeof *v); memset(v, 0, sizeof *v); v->t = t; return v; }
static void jv_free(jv* v) {
    if (!v) return;
    free(v->s);
    for (size_t k = 0; k < v->n; k++) { jv_free(v->items[k]); if (v->keys) free(v->keys[k]); }
    free(v->items); free(v->keys); free(v->klens); free(v);
}
static jv* jv_str(const char* s, size_t n) { jv* v = jv_new(JSTR); v->s = xstrndup(s, n); v->slen = n; return v; }
static void jv_grow(jv* v) {
    if (v->n < v->cap) return;
    v->cap = v->cap ? v->cap * 2 : 4;
    v->items = xrealloc(v->items, v->cap * sizeof *v->items);
    if (v->t == JOBJ) { v->keys = xrealloc(v->keys, v->cap * sizeof *v->keys); v->klens = xrealloc(v->klens, v->cap * sizeof *v->klens); }
}
static void jv_push(jv* a, jv* x) { jv_grow(a); a->items[a->n++] = x; }
static void jv_set(jv* o, const char* k, size_t kl, jv* x) {
    for (size_t i = 0; i < o->n; i++)
        if (o->klens[i] == kl && memcmp(o->keys[i], k, kl) == 0) { jv_free(o->items[i]); o->items[i] = x; return; }
    jv_grow(o);
    o->keys[o->n] = xstrndup(k, kl); o->klens[o->n] = kl; o->items[o->n] = x; o->n++;
}
static jv* jv_get(const jv* o, const char* k) {
    if (!o || o->t != JOBJ) return NULL;
    size_t kl = strlen(k);
    for (size_t i = 0; i < o->n; i++)
        if (o->klens[i] == kl && memcmp(o->keys[i], k, kl) == 0) return o->items[i];
    return NULL;
}
static jv* jv_copy(const jv* v) {
    jv* c = jv_new(v->t);
    c->b = v->b; c->i = v->i; c->u = v->u; c->d = v->d;
    if (v->t == JSTR) { c->s = xstrndup(v->s, v->slen); c->slen = v->slen; }
    for (size_t k = 0; k < v->n; k++) {
        if (v->t == JOBJ) jv_set(c, v->keys[k], v->klens[k], jv_copy(v->items[k]));
        else jv_push(c, jv_copy(v->items[k]));
    }
    return c;
}

/* parser */
typedef struct { const char* p; const char* e; int depth; } jp_t;
static void jp_ws(jp_t* P) { while (P->p < P->e && (*P->p == ' ' || *P->p == '\t' || *P->p == '\n' || *P->p == '\r')) P->p++; }
static jv* jp_value(jp_t* P);

static int hex4(const char* p, unsigned* out) {
    unsigned v = 0;
    for (int i = 0; i < 4; i++) {
        char c = p[i]; v <<= 4;
        if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
        else return 0;
    }
    *out = v; return 1;
}
static void put_utf8(sb_t* b, unsigned cp) {
    char t[4];
    if (cp < 0x80) { t[0] = (char)cp; sb_put(b, t, 1); }
    else if (cp < 0x800) { t[0] = (char)(0xC0 | (cp >> 6)); t[1] = (char)(0x80 | (cp & 0x3F)); sb_put(b, t, 2); }
    else if (cp < 0x10000) { t[0] = (char)(0xE0 | (cp >> 12)); t[1] = (char)(0x80 | ((cp >> 6) & 0x3F)); t[2] = (char)(0x80 | (cp & 0x3F)); sb_put(b, t, 3); }
    else { t[0] = (char)(0xF0 | (cp >> 18)); t[1] = (char)(0x80 | ((cp >> 12) & 0x3F)); t[2] = (char)(0x80 | ((cp >> 6) & 0x3F)); t[3] = (char)(0x80 | (cp & 0x3F)); sb_put(b, t, 4); }
}
/* length of a valid UTF-8 sequence starting at p (0 if invalid) */
static size_t utf8_len(const unsigned char* p, const unsigned char* e) {
    unsigned c = p[0];
    size_t n; unsigned cp;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) { n = 2; cp = c & 0x1F; }
    else if (c >= 0xE0 && c <= 0xEF) { n = 3; cp = c & 0x0F; }
    else if (c >= 0xF0 && c <= 0xF4) { n = 4; cp = c & 0x07; }
    else return 0;
    if ((size_t)(e - p) < n) return 0;
    for (size_t i = 1; i < n; i++) { if ((p[i] & 0xC0) != 0x80) return 0; cp = (cp << 6) | (p[i] & 0x3F); }
    if ((n == 3 && cp < 0x800) || (n == 4 && (cp < 0x10000 || cp > 0x10FFFF)) || (cp >= 0xD800 && cp <= 0xDFFF)) return 0;
    return n;
}
static int jp_string(jp_t* P, char** out, size_t* outlen) {
    if (P->p >= P->e || *P->p != '"') return 0;
    P->p++;
    sb_t b = {0};
    while (1) {
        if (P->p >= P->e) goto bad;
        unsigned char c = (unsigned char)*P->p;
        if (c == '"') { P->p++; break; }
        if (c < 0x20) goto bad;
        if (c == '\\') {
            P->p++;
            if (P->p >= P->e) goto bad;
            char esc = *P->p++;
            switch (esc) {
            case '"': sb_putc(&b, '"'); break;
            case '\\': sb_putc(&b, '\\'); break;
            case '/': sb_putc(&b, '/'); break;
            case 'b': sb_putc(&b, '\b'); break;
            case 'f': sb_putc(&b, '\f'); break;
            case 'n': sb_putc(&b, '\n'); break;
            case 'r': sb_putc(&b, '\r'); break;
            case 't': sb_putc(&b, '\t'); break;
            case 'u': {
                unsigned cp;
                if (P->e - P->p < 4 || !hex4(P->p, &cp)) goto bad;
                P->p += 4;
                if (cp >= 0xD800 && cp <= 0xDBFF) {
                    unsigned lo;
                    if (P->e - P->p < 6 || P->p[0] != '\\' || P->p[1] != 'u' || !hex4(P->p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF) goto bad;
                    P->p += 6;
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                } else if (cp >= 0xDC00 && cp <= 0xDFFF) goto bad;
                put_utf8(&b, cp);
                break;
            }
            default: goto bad;
            }
            continue;
        }
        size_t n = utf8_len((const unsigned char*)P->p, (const unsigned char*)P->e);
        if (!n) goto bad;
        sb_put(&b, P->p, n); P->p += n;
    }
    *outlen = b.n; *out = sb_take(&b);
    return 1;
bad:
    free(b.p); return 0;
}
static jv* jp_number(jp_t* P) {
    const char* s = P->p; int is_int = 1;
    if (P->p < P->e && *P->p == '-') P->p++;
    if (P->p >= P->e) return NULL;
    if (*P->p == '0') P->p++;
    else if (*P->p >= '1' && *P->p <= '9') { while (P->p < P->e && *P->p >= '0' && *P->p <= '9') P->p++; }
    else return NULL;
    if (P->p < P->e && *P->p == '.') {
        is_int = 0; P->p++;
        if (P->p >= P->e || !(*P->p >= '0' && *P->p <= '9')) return NULL;
        while (P->p < P->e && *P->p >= '0' && *P->p <= '9') P->p++;
    }
    if (P->p < P->e && (*P->p == 'e' || *P->p == 'E')) {
        is_int = 0; P->p++;
        if (P->p < P->e && (*P->p == '+' || *P->p == '-')) P->p++;
        if (P->p >= P->e || !(*P->p >= '0' && *P->p <= '9')) return NULL;
        while (P->p < P->e && *P->p >= '0' && *P->p <= '9') P->p++;
    }
    char* tmp = xstrndup(s, (size_t)(P->p - s));
    jv* v = NULL;
    if (is_int) {
        errno = 0;
        long long ll = strtoll(tmp, NULL, 10);
        if (errno == 0) { v = jv_new(JINT); v->i = ll; }
        else if (tmp[0] != '-') {
            errno = 0;
            unsigned long long ull = strtoull(tmp, NULL, 10);
            if (errno == 0) { v = jv_new(JUINT); v->u = ull; }
        }
    }
    if (!v) { v = jv_new(JDBL); v->d = strtod(tmp, NULL); }
    free(tmp);
    return v;
}
static int jp_lit(jp_t* P, const char* w) {
    size_t n = strlen(w);
    if ((size_t)(P->e - P->p) >= n && memcmp(P->p, w, n) == 0) { P->p += n; return 1; }
    return 0;
}
static jv* jp_value(jp_t* P) {
    jp_ws(P);
    if (P->p >= P->e) return NULL;
    char c = *P->p;
    if (c == '{' || c == '[') {
        if (++P->depth > 512) return NULL;
        int obj = c == '{';
        jv* v = jv_new(obj ? JOBJ : JARR);
        P->p++;
        jp_ws(P);
        if (P->p < P->e && *P->p == (obj ? '}' : ']')) { P->p++; P->depth--; return v; }
        while (1) {
            jp_ws(P);
            char* k = NULL; size_t kl = 0;
            if (obj) {
                if (!jp_string(P, &k, &kl)) { jv_free(v); return NULL; }
                jp_ws(P);
                if (P->p >= P->e || *P->p != ':') { free(k); jv_free(v); return NULL; }
                P->p++;
            }
            jv* x = jp_value(P);
            if (!x) { free(k); jv_free(v); return NULL; }
            if (obj) { jv_set(v, k, kl, x); free(k); } else jv_push(v, x);
            jp_ws(P);
            if (P->p >= P->e) { jv_free(v); return NULL; }
            if (*P->p == ',') { P->p++; continue; }
            if (*P->p == (obj ? '}' : ']')) { P->p++; break; }
            jv_free(v); return NULL;
        }
        P->depth--;
        return v;
    }
    if (c == '"') { char* s; size_t n; if (!jp_string(P, &s, &n)) return NULL; jv* v = jv_new(JSTR); v->s = s; v->slen = n; return v; }
    if (jp_lit(P, "true")) { jv* v = jv_new(JBOOL); v->b = 1; return v; }
    if (jp_lit(P, "false")) return jv_new(JBOOL);
    if (jp_lit(P, "null")) return jv_new(JNULL);
    return jp_number(P);
}
static jv* json_parse(const char* s, size_t n) {
    jp_t P = {s, s + n, 0};
    jv* v = jp_value(&P);
    if (!v) return NULL;
    jp_ws(&P);
    if (P.p != P.e) { jv_free(v); return NULL; }
    return v;
}

/* serializer (compact) */
static void js_string(sb_t* b, const char* s, size_t n) {
    sb_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        char t[8];
        switch (c) {
        case '"': sb_puts(b, "\\\""); break;
        case '\\': sb_puts(b, "\\\\"); break;
        case '\b': sb_puts(b, "\\b"); break;
        case '\f': sb_puts(b, "\\f"); break;
        case '\n': sb_puts(b, "\\n"); break;
        case '\r': sb_puts(b, "\\r"); break;
        case '\t': sb_puts(b, "\\t"); break;
        default:
            if (c < 0x20) { snprintf(t, sizeof t, "\\u%04x", c); sb_puts(b, t); }
            else sb_putc(b, (char)c);
        }
    }
    sb_putc(b, '"');
}
/* shortest round-trip digits, laid out like nlohmann::json (fixed for exponents -4..15, else d.ddde+XX) */
static void js_double(sb_t* b, double d) {
    char e[64], digits[32], out[96];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, d);
        if (strtod(e, NULL) == d) break;
    }
    const char* p = e;
    size_t k = 0, o = 0;
    if (*p == '-') { out[o++] = '-'; p++; }
    for (; *p && *p != 'e'; p++) if (*p >= '0' && *p <= '9') digits[k++] = *p;
    int exp10 = *p == 'e' ? atoi(p + 1) : 0;
    while (k > 1 && digits[k - 1] == '0') k--;
    digits[k] = 0;
    int n = exp10 + 1; /* position of the decimal point */
    if ((int)k <= n && n <= 15) {
        memcpy(out + o, digits, k); o += k;
        for (int i = (int)k; i < n; i++) out[o++] = '0';
        out[o++] = '.'; out[o++] = '0';
    } else if (0 < n && n <= 15) {
        memcpy(out + o, digits, (size_t)n); o += (size_t)n;
        out[o++] = '.';
        memcpy(out + o, digits + n, k - (size_t)n); o += k - (size_t)n;
    } else if (-4 < n && n <= 0) {
        out[o++] = '0'; out[o++] = '.';
        for (int i = n; i < 0; i++) out[o++] = '0';
        memcpy(out + o, digits, k); o += k;
    } else {
        out[o++] = digits[0];
        if (k > 1) { out[o++] = '.'; memcpy(out + o, digits + 1, k - 1); o += k - 1; }
        o += (size_t)snprintf(out + o, sizeof out - o, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
    }
    sb_put(b, out, o);
}
static void js_value(sb_t* b, const jv* v) {
    char t[64];
    switch (v->t) {
    case JNULL: sb_puts(b, "null"); break;
    case JBOOL: sb_puts(b, v->b ? "true" : "false"); break;
    case JINT: snprintf(t, sizeof t, "%lld", v->i); sb_puts(b, t); break;
    case JUINT: snprintf(t, sizeof t, "%llu", v->u); sb_puts(b, t); break;
    case JDBL:
        if (!isfinite(v->d)) { sb_puts(b, "null"); break; }
        js_double(b, v->d);
        break;
    case JSTR: js_string(b, v->s, v->slen); break;
    case JARR:
        sb_putc(b, '[');
        for (size_t i = 0; i < v->n; i++) { if (i) sb_putc(b, ','); js_value(b, v->items[i]); }
        sb_putc(b, ']');
        break;
    case JOBJ:
        sb_putc(b, '{');
        for (size_t i = 0; i < v->n; i++) {
            if (i) sb_putc(b, ',');
            js_string(b, v->keys[i], v->klens[i]); sb_putc(b, ':'); js_value(b, v->items[i]);
        }
        sb_putc(b, '}');
        break;
    }
}
static char* json_dump(const jv* v) { sb_t b = {0}; js_value(&b, v); return sb_take(&b); }

/* ------------------------------------------------------------------ handle structs */
#define MAGIC_JSON 0x4a534f4eu
#define MAGIC_CHAT 0x43484154u
#define MAGIC_CFG  0x43464721u
#define MAGIC_PERF 0x50455246u
#define MAGIC_RES  0x52455355u
#define MAGIC_PIPE 0x50495045u
#define MAGIC_VRES 0x56524553u
#define MAGIC_VPIP 0x56504950u

struct ov_genai_json_container_opaque { unsigned magic; jv* v; };
struct ov_genai_chat_history_opaque { unsigned magic; jv* msgs; jv* tools; jv* extra; };

typedef struct {
    size_t max_new_tokens, max_length, min_new_tokens, logprobs, num_beam_groups, num_beams, num_return_sequences;
    size_t no_repeat_ngram_size, top_k, rng_seed, num_assistant_tokens, max_ngram_size;
    bool ignore_eos, echo, include_stop_str_in_output, do_sample, apply_chat_template;
    float diversity_penalty, length_penalty, temperature, top_p, min_p, repetition_penalty, presence_penalty;
    float frequency_penalty, assistant_confidence_threshold;
    int stop_criteria;
    int64_t eos_token_id;
    char** stop_strings; size_t n_stop_strings;
    int64_t* stop_ids; size_t n_stop_ids;
} gcfg_t;

struct ov_genai_generation_config_opaque { unsigned magic; gcfg_t c; };

typedef struct {
    float load_time;
    size_t num_input_tokens, num_generation_tokens;
    float m[9][2]; /* ttft, tpot, ipot, throughput, inference, generate, tokenization, detokenization, chat_template */
    double weight; /* number of generate calls aggregated */
} perf_t;
enum { P_TTFT, P_TPOT, P_IPOT, P_THRU, P_INFER, P_GEN, P_TOK, P_DETOK, P_CHAT };

struct ov_genai_perf_metrics_opaque { unsigned magic; perf_t p; };
struct ov_genai_decoded_results_opaque { unsigned magic; char* text; perf_t p; };

struct ov_genai_llm_pipeline_opaque {
    unsigned magic;
    long serial;
    atomic_int in_call;
    gcfg_t cfg;
    int chat_on;
    jv* chat; /* array of messages */
    float load_time;
};

/* ------------------------------------------------------------------ generation config */
static void cfg_defaults(gcfg_t* c) {
    memset(c, 0, sizeof *c);
    c->max_new_tokens = SIZE_MAX; c->max_length = SIZE_MAX; c->min_new_tokens = 0; c->logprobs = 0;
    c->num_beam_groups = 1; c->num_beams = 1; c->num_return_sequences = 1; c->no_repeat_ngram_size = SIZE_MAX;
    c->top_k = SIZE_MAX; c->rng_seed = 0; c->num_assistant_tokens = 0; c->max_ngram_size = 0;
    c->apply_chat_template = true;
    c->diversity_penalty = 0.0f; c->length_penalty = 1.0f; c->temperature = 1.0f; c->top_p = 1.0f; c->min_p = 0.0f;
    c->repetition_penalty = 1.0f; c->presence_penalty = 0.0f; c->frequency_penalty = 0.0f;
    c->assistant_confidence_threshold = 0.0f; c->stop_criteria = HEURISTIC; c->eos_token_id = -1;
}
static void cfg_clear(gcfg_t* c) {
    for (size_t i = 0; i < c->n_stop_strings; i++) free(c->stop_strings[i]);
    free(c->stop_strings); free(c->stop_ids);
    c->stop_strings = NULL; c->n_stop_strings = 0; c->stop_ids = NULL; c->n_stop_ids = 0;
}
static void cfg_copy(gcfg_t* dst, const gcfg_t* src) {
    *dst = *src;
    dst->stop_strings = xmalloc(src->n_stop_strings * sizeof(char*));
    for (size_t i = 0; i < src->n_stop_strings; i++) dst->stop_strings[i] = xstrdup(src->stop_strings[i]);
    dst->stop_ids = xmalloc(src->n_stop_ids * sizeof(int64_t));
    if (src->n_stop_ids) memcpy(dst->stop_ids, src->stop_ids, src->n_stop_ids * sizeof(int64_t));
}
static int cfg_has_stop_id(const gcfg_t* c, int64_t id) {
    for (size_t i = 0; i < c->n_stop_ids; i++) if (c->stop_ids[i] == id) return 1;
    return 0;
}
static void cfg_add_stop_id(gcfg_t* c, int64_t id) {
    if (cfg_has_stop_id(c, id)) return;
    c->stop_ids = xrealloc(c->stop_ids, (c->n_stop_ids + 1) * sizeof(int64_t));
    c->stop_ids[c->n_stop_ids++] = id;
}
static void cfg_add_stop_string(gcfg_t* c, const char* s) {
    for (size_t i = 0; i < c->n_stop_strings; i++) if (strcmp(c->stop_strings[i], s) == 0) return;
    c->stop_strings = xrealloc(c->stop_strings, (c->n_stop_strings + 1) * sizeof(char*));
    c->stop_strings[c->n_stop_strings++] = xstrdup(s);
}
static void cfg_set_eos(gcfg_t* c, int64_t id) { c->eos_token_id = id; cfg_add_stop_id(c, id); }

/* returns 1 if valid */
static int cfg_valid(const gcfg_t* c) {
    if (c->num_return_sequences == 0) return 0;
    if (c->eos_token_id != -1 && !cfg_has_stop_id(c, c->eos_token_id)) return 0;
    for (size_t i = 0; i < c->n_stop_ids; i++) if (c->stop_ids[i] < 0) return 0;
    int unlimited = c->max_new_tokens == SIZE_MAX && c->max_length == SIZE_MAX;
    if (c->ignore_eos && unlimited) return 0;
    if (c->eos_token_id == -1 && c->n_stop_ids == 0 && c->n_stop_strings == 0 && unlimited) return 0;
    if (c->max_new_tokens == 0 && !c->echo) return 0;
    if (c->min_new_tokens > c->max_new_tokens) return 0;
    int beam = c->num_beams > 1;
    if (c->num_return_sequences > 1 && !c->do_sample && !beam) return 0;
    if (!beam) {
        if (c->frequency_penalty < -2.0f || c->frequency_penalty > 2.0f) return 0;
        if (c->presence_penalty < -2.0f || c->presence_penalty > 2.0f) return 0;
        if (!(c->repetition_penalty > 0.0f)) return 0;
    }
    if (c->do_sample) {
        if (!(c->top_p > 0.0f && c->top_p <= 1.0f)) return 0;
        if (!(c->temperature > 0.0f)) return 0;
        if (!(c->min_p >= 0.0f && c->min_p < 1.0f)) return 0;
    }
    /* assisted generation / prompt lookup (upstream rules beyond the ABI doc's list) */
    int assisting = c->assistant_confidence_threshold > 0.0f || c->num_assistant_tokens > 0;
    if (assisting) {
        if (beam || c->num_return_sequences > 1) return 0;
        if (c->assistant_confidence_threshold != 0.0f && c->num_assistant_tokens != 0) return 0;
    }
    int prompt_lookup = c->max_ngram_size > 0 && c->num_assistant_tokens > 0;
    if (!prompt_lookup && c->max_ngram_size != 0) return 0;
    if (beam) {
        if (c->num_beam_groups == 0 || c->num_beams % c->num_beam_groups != 0) return 0;
        if (c->num_beams < c->num_return_sequences) return 0;
        if (c->do_sample) return 0;
        if (c->no_repeat_ngram_size == 0) return 0;
        if (c->frequency_penalty != 0.0f || c->presence_penalty != 0.0f || c->repetition_penalty != 1.0f) return 0;
        if (c->num_beam_groups > 1 && c->diversity_penalty == 0.0f) return 0;
        if (c->num_beam_groups == 1 && c->diversity_penalty != 0.0f) return 0;
    }
    return 1;
}

static ov_genai_generation_config* cfg_handle_new(void) {
    ov_genai_generation_config* h = xmalloc(sizeof *h);
    h->magic = MAGIC_CFG; cfg_defaults(&h->c);
    live_inc(K_CONFIG);
    return h;
}
#define CFG_OK(h) ((h) && (h)->magic == MAGIC_CFG)

static int jnum(const jv* v, double* out) {
    if (!v) return 0;
    if (v->t == JINT) { *out = (double)v->i; return 1; }
    if (v->t == JUINT) { *out = (double)v->u; return 1; }
    if (v->t == JDBL) { *out = v->d; return 1; }
    if (v->t == JBOOL) { *out = v->b; return 1; }
    return -1;
}
/* read a generation_config.json into c (defaults first). returns 1 ok, 0 bad */
static int cfg_from_file(const char* path, gcfg_t* c) {
    FILE* f = fopen(path, "rb");
    if (!f) return 0;
    sb_t b = {0}; char buf[4096]; size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) sb_put(&b, buf, n);
    fclose(f);
    jv* v = json_parse(b.p ? b.p : "", b.n);
    free(b.p);
    if (!v || v->t != JOBJ) { jv_free(v); return 0; }
    cfg_defaults(c);
    int ok = 1; double d;
#define SZ(name) do { int r = jnum(jv_get(v, #name), &d); if (r < 0 || (r && d < 0)) ok = 0; else if (r) c->name = d >= 1.8e19 ? SIZE_MAX : (size_t)d; } while (0)
#define FL(name) do { int r = jnum(jv_get(v, #name), &d); if (r < 0) ok = 0; else if (r) c->name = (float)d; } while (0)
#define BO(name) do { int r = jnum(jv_get(v, #name), &d); if (r < 0) ok = 0; else if (r) c->name = d != 0; } while (0)
    SZ(max_new_tokens); SZ(max_length); SZ(min_new_tokens); SZ(top_k); SZ(num_beams); SZ(num_beam_groups);
    SZ(num_return_sequences); SZ(no_repeat_ngram_size); SZ(logprobs); SZ(rng_seed);
    FL(temperature); FL(top_p); FL(min_p); FL(repetition_penalty); FL(presence_penalty); FL(frequency_penalty);
    FL(diversity_penalty); FL(length_penalty);
    BO(do_sample); BO(ignore_eos); BO(echo); BO(include_stop_str_in_output);
#undef SZ
#undef FL
#undef BO
    jv* e = jv_get(v, "eos_token_id");
    if (e && e->t == JINT) cfg_set_eos(c, e->i);
    else if (e && e->t == JARR) {
        for (size_t i = 0; i < e->n; i++) {
            if (e->items[i]->t != JINT) { ok = 0; break; }
            if (i == 0) c->eos_token_id = e->items[i]->i;
            cfg_add_stop_id(c, e->items[i]->i);
        }
    } else if (e && e->t != JNULL) ok = 0;
    jv* st = jv_get(v, "stop_token_ids");
    if (st && st->t == JARR)
        for (size_t i = 0; i < st->n; i++) if (st->items[i]->t == JINT) cfg_add_stop_id(c, st->items[i]->i);
    jv* ss = jv_get(v, "stop_strings");
    if (ss && ss->t == JARR)
        for (size_t i = 0; i < ss->n; i++) if (ss->items[i]->t == JSTR) cfg_add_stop_string(c, ss->items[i]->s);
    jv_free(v);
    if (!ok) cfg_clear(c);
    return ok;
}

EXPORT ov_status_e ov_genai_generation_config_create(ov_genai_generation_config** config) {
    if (!config) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    *config = cfg_handle_new();
    return OK;
}
EXPORT ov_status_e ov_genai_generation_config_create_from_json(const char* json_path, ov_genai_generation_config** config) {
    if (!json_path || !config) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    gcfg_t c;
    if (!cfg_from_file(json_path, &c)) return UNKNOW_EXCEPTION;
    ov_genai_generation_config* h = cfg_handle_new();
    h->c = c;
    *config = h;
    return OK;
}
EXPORT void ov_genai_generation_config_free(ov_genai_generation_config* handle) {
    if (!CFG_OK(handle)) return;
    cfg_clear(&handle->c); handle->magic = 0; free(handle);
    live_dec(K_CONFIG);
}

#define CFG_SETTER(fname, type, field)                                                              \
    EXPORT ov_status_e ov_genai_generation_config_set_##fname(ov_genai_generation_config* config, const type value) { \
        if (!CFG_OK(config)) return INVALID_C_PARAM;                                                \
        int st = injected(__func__); if (st) return st;                                             \
        config->c.field = value;                                                                    \
        return OK;                                                                                  \
    }
CFG_SETTER(max_new_tokens, size_t, max_new_tokens)
CFG_SETTER(max_length, size_t, max_length)
CFG_SETTER(ignore_eos, bool, ignore_eos)
CFG_SETTER(min_new_tokens, size_t, min_new_tokens)
CFG_SETTER(echo, bool, echo)
CFG_SETTER(logprobs, size_t, logprobs)
CFG_SETTER(include_stop_str_in_output, bool, include_stop_str_in_output)
CFG_SETTER(num_beam_groups, size_t, num_beam_groups)
CFG_SETTER(num_beams, size_t, num_beams)
CFG_SETTER(diversity_penalty, float, diversity_penalty)
CFG_SETTER(length_penalty, float, length_penalty)
CFG_SETTER(num_return_sequences, size_t, num_return_sequences)
CFG_SETTER(no_repeat_ngram_size, size_t, no_repeat_ngram_size)
CFG_SETTER(temperature, float, temperature)
CFG_SETTER(top_p, float, top_p)
CFG_SETTER(top_k, size_t, top_k)
CFG_SETTER(min_p, float, min_p)
CFG_SETTER(do_sample, bool, do_sample)
CFG_SETTER(repetition_penalty, float, repetition_penalty)
CFG_SETTER(presence_penalty, float, presence_penalty)
CFG_SETTER(frequency_penalty, float, frequency_penalty)
CFG_SETTER(rng_seed, size_t, rng_seed)
CFG_SETTER(assistant_confidence_threshold, float, assistant_confidence_threshold)
CFG_SETTER(num_assistant_tokens, size_t, num_assistant_tokens)
CFG_SETTER(max_ngram_size, size_t, max_ngram_size)

EXPORT ov_status_e ov_genai_generation_config_set_stop_criteria(ov_genai_generation_config* config, const StopCriteria value) {
    if (!CFG_OK(config)) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    config->c.stop_criteria = (int)value;
    return OK;
}
EXPORT ov_status_e ov_genai_generation_config_set_stop_strings(ov_genai_generation_config* config, const char** strings, const size_t count) {
    if (!CFG_OK(config) || !strings) return INVALID_C_PARAM; /* upstream: NULL array is -14 even for count 0 */
    int st = injected(__func__); if (st) return st;
    for (size_t i = 0; i < config->c.n_stop_strings; i++) free(config->c.stop_strings[i]);
    free(config->c.stop_strings); config->c.stop_strings = NULL; config->c.n_stop_strings = 0;
    for (size_t i = 0; i < count; i++) if (strings[i]) cfg_add_stop_string(&config->c, strings[i]);
    return OK;
}
EXPORT ov_status_e ov_genai_generation_config_set_stop_token_ids(ov_genai_generation_config* config, const int64_t* token_ids, const size_t token_ids_num) {
    if (!CFG_OK(config) || (!token_ids && token_ids_num)) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    free(config->c.stop_ids); config->c.stop_ids = NULL; config->c.n_stop_ids = 0;
    for (size_t i = 0; i < token_ids_num; i++) cfg_add_stop_id(&config->c, token_ids[i]);
    return OK;
}
EXPORT ov_status_e ov_genai_generation_config_set_eos_token_id(ov_genai_generation_config* config, const int64_t id) {
    if (!CFG_OK(config)) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    config->c.eos_token_id = id; /* plain field set, as upstream's C setter: stop_token_ids is left alone */
    return OK;
}
EXPORT ov_status_e ov_genai_generation_config_get_max_new_tokens(const ov_genai_generation_config* config, size_t* max_new_tokens) {
    if (!CFG_OK(config) || !max_new_tokens) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    *max_new_tokens = config->c.max_new_tokens;
    return OK;
}
EXPORT ov_status_e ov_genai_generation_config_validate(ov_genai_generation_config* config) {
    if (!CFG_OK(config)) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    return cfg_valid(&config->c) ? OK : UNKNOW_EXCEPTION;
}

/* ------------------------------------------------------------------ perf metrics */
static const float k_perf_defaults[9] = {20.0f, 5.0f, 5.0f, 200.0f, 30.0f, 40.0f, 1.5f, 0.75f, 0.25f};
static void perf_fill(perf_t* p, float load_time, size_t n_in, size_t n_gen) {
    memset(p, 0, sizeof *p);
    p->load_time = load_time; p->num_input_tokens = n_in; p->num_generation_tokens = n_gen;
    for (int i = 0; i < 9; i++) { p->m[i][0] = k_perf_defaults[i]; p->m[i][1] = 0.0f; }
    p->weight = 1.0;
}
#define PERF_OK(h) ((h) && (h)->magic == MAGIC_PERF)
static ov_status_e perf_pair(const ov_genai_perf_metrics* m, float* mean, float* std, int idx, const char* fn) {
    if (!PERF_OK(m) || !mean || !std) return INVALID_C_PARAM;
    int st = injected(fn); if (st) return st;
    *mean = m->p.m[idx][0]; *std = m->p.m[idx][1];
    return OK;
}
EXPORT ov_status_e ov_genai_perf_metrics_get_load_time(const ov_genai_perf_metrics* metrics, float* load_time) {
    if (!PERF_OK(metrics) || !load_time) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    *load_time = metrics->p.load_time; return OK;
}
EXPORT ov_status_e ov_genai_perf_metrics_get_num_generation_tokens(const ov_genai_perf_metrics* metrics, size_t* num_generation_tokens) {
    if (!PERF_OK(metrics) || !num_generation_tokens) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    *num_generation_tokens = metrics->p.num_generation_tokens; return OK;
}
EXPORT ov_status_e ov_genai_perf_metrics_get_num_input_tokens(const ov_genai_perf_metrics* metrics, size_t* num_input_tokens) {
    if (!PERF_OK(metrics) || !num_input_tokens) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    *num_input_tokens = metrics->p.num_input_tokens; return OK;
}
#define PERF_GETTER(name, idx) \
    EXPORT ov_status_e ov_genai_perf_metrics_get_##name(const ov_genai_perf_metrics* metrics, float* mean, float* std) { \
        return perf_pair(metrics, mean, std, idx, __func__); }
PERF_GETTER(ttft, P_TTFT)
PERF_GETTER(tpot, P_TPOT)
PERF_GETTER(ipot, P_IPOT)
PERF_GETTER(throughput, P_THRU)
PERF_GETTER(inference_duration, P_INFER)
PERF_GETTER(generate_duration, P_GEN)
PERF_GETTER(tokenization_duration, P_TOK)
PERF_GETTER(detokenization_duration, P_DETOK)
PERF_GETTER(chat_template_duration, P_CHAT)

EXPORT ov_status_e ov_genai_perf_metrics_add_in_place(ov_genai_perf_metrics* left, const ov_genai_perf_metrics* right) {
    if (!PERF_OK(left) || !PERF_OK(right)) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    perf_t* l = &left->p; const perf_t* r = &right->p;
    double wl = l->weight, wr = r->weight, w = wl + wr;
    if (w <= 0) { wl = wr = 1; w = 2; }
    for (int i = 0; i < 9; i++)
        for (int j = 0; j < 2; j++) l->m[i][j] = (float)((l->m[i][j] * wl + r->m[i][j] * wr) / w);
    l->num_input_tokens += r->num_input_tokens;
    l->num_generation_tokens += r->num_generation_tokens;
    l->weight = l->weight + r->weight;
    return OK;
}

/* ------------------------------------------------------------------ JSON container */
#define JC_OK(h) ((h) && (h)->magic == MAGIC_JSON)
static ov_genai_json_container* jc_wrap(jv* v) {
    ov_genai_json_container* h = xmalloc(sizeof *h);
    h->magic = MAGIC_JSON; h->v = v;
    live_inc(K_JSON);
    return h;
}
EXPORT ov_genai_json_container_status_e ov_genai_json_container_create(ov_genai_json_container** container) {
    if (!container) return OV_GENAI_JSON_CONTAINER_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    *container = jc_wrap(jv_new(JOBJ));
    return OV_GENAI_JSON_CONTAINER_OK;
}
EXPORT ov_genai_json_container_status_e ov_genai_json_container_create_from_json_string(ov_genai_json_container** container, const char* json_str) {
    if (!container || !json_str) return OV_GENAI_JSON_CONTAINER_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    jv* v = json_parse(json_str, strlen(json_str));
    if (!v) return OV_GENAI_JSON_CONTAINER_INVALID_JSON;
    *container = jc_wrap(v);
    return OV_GENAI_JSON_CONTAINER_OK;
}
EXPORT ov_genai_json_container_status_e ov_genai_json_container_create_object(ov_genai_json_container** container) {
    if (!container) return OV_GENAI_JSON_CONTAINER_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    *container = jc_wrap(jv_new(JOBJ));
    return OV_GENAI_JSON_CONTAINER_OK;
}
EXPORT ov_genai_json_container_status_e ov_genai_json_container_create_array(ov_genai_json_container** container) {
    if (!container) return OV_GENAI_JSON_CONTAINER_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    *container = jc_wrap(jv_new(JARR));
    return OV_GENAI_JSON_CONTAINER_OK;
}
EXPORT void ov_genai_json_container_free(ov_genai_json_container* container) {
    if (!JC_OK(container)) return;
    jv_free(container->v); container->magic = 0; free(container);
    live_dec(K_JSON);
}
/* two-call copy; returns 0 ok, 1 null-args, 2 too small */
static int two_call(const char* s, char* output, size_t* output_size) {
    size_t need = strlen(s) + 1;
    if (!output) { *output_size = need; return 0; }
    if (*output_size < need) return 2;
    memcpy(output, s, need);
    *output_size = need;
    return 0;
}
EXPORT ov_genai_json_container_status_e ov_genai_json_container_to_json_string(const ov_genai_json_container* container, char* output, size_t* output_size) {
    if (!JC_OK(container) || !output_size) return OV_GENAI_JSON_CONTAINER_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    char* s = json_dump(container->v);
    int r = two_call(s, output, output_size);
    free(s);
    return r ? OV_GENAI_JSON_CONTAINER_OUT_OF_BOUNDS : OV_GENAI_JSON_CONTAINER_OK;
}
EXPORT ov_genai_json_container_status_e ov_genai_json_container_copy(const ov_genai_json_container* source, ov_genai_json_container** target) {
    if (!JC_OK(source) || !target) return OV_GENAI_JSON_CONTAINER_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    *target = jc_wrap(jv_copy(source->v));
    return OV_GENAI_JSON_CONTAINER_OK;
}

/* ------------------------------------------------------------------ chat history */
#define CH_OK(h) ((h) && (h)->magic == MAGIC_CHAT)
static ov_genai_chat_history* ch_new(jv* msgs) {
    ov_genai_chat_history* h = xmalloc(sizeof *h);
    h->magic = MAGIC_CHAT; h->msgs = msgs; h->tools = jv_new(JARR); h->extra = jv_new(JOBJ);
    live_inc(K_CHAT);
    return h;
}
EXPORT ov_genai_chat_history_status_e ov_genai_chat_history_create(ov_genai_chat_history** history) {
    if (!history) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    *history = ch_new(jv_new(JARR));
    return OV_GENAI_CHAT_HISTORY_OK;
}
EXPORT ov_genai_chat_history_status_e ov_genai_chat_history_create_from_json_container(ov_genai_chat_history** history, const ov_genai_json_container* messages) {
    if (!history || !JC_OK(messages)) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    if (messages->v->t != JARR) return OV_GENAI_CHAT_HISTORY_INVALID_JSON;
    *history = ch_new(jv_copy(messages->v));
    return OV_GENAI_CHAT_HISTORY_OK;
}
EXPORT void ov_genai_chat_history_free(ov_genai_chat_history* history) {
    if (!CH_OK(history)) return;
    jv_free(history->msgs); jv_free(history->tools); jv_free(history->extra);
    history->magic = 0; free(history);
    live_dec(K_CHAT);
}
EXPORT ov_genai_chat_history_status_e ov_genai_chat_history_push_back(ov_genai_chat_history* history, const ov_genai_json_container* message) {
    if (!CH_OK(history) || !JC_OK(message)) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    if (message->v->t != JOBJ) return OV_GENAI_CHAT_HISTORY_INVALID_JSON;
    jv_push(history->msgs, jv_copy(message->v));
    return OV_GENAI_CHAT_HISTORY_OK;
}
EXPORT ov_genai_chat_history_status_e ov_genai_chat_history_pop_back(ov_genai_chat_history* history) {
    if (!CH_OK(history)) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    if (history->msgs->n == 0) return OV_GENAI_CHAT_HISTORY_EMPTY;
    jv_free(history->msgs->items[--history->msgs->n]);
    return OV_GENAI_CHAT_HISTORY_OK;
}
EXPORT ov_genai_chat_history_status_e ov_genai_chat_history_get_messages(const ov_genai_chat_history* history, ov_genai_json_container** messages) {
    if (!CH_OK(history) || !messages) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    *messages = jc_wrap(jv_copy(history->msgs));
    return OV_GENAI_CHAT_HISTORY_OK;
}
EXPORT ov_genai_chat_history_status_e ov_genai_chat_history_get_message(const ov_genai_chat_history* history, size_t index, ov_genai_json_container** message) {
    if (!CH_OK(history) || !message) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    if (index >= history->msgs->n) return OV_GENAI_CHAT_HISTORY_OUT_OF_BOUNDS;
    *message = jc_wrap(jv_copy(history->msgs->items[index]));
    return OV_GENAI_CHAT_HISTORY_OK;
}
EXPORT ov_genai_chat_history_status_e ov_genai_chat_history_get_first(const ov_genai_chat_history* history, ov_genai_json_container** message) {
    if (!CH_OK(history) || !message) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    if (history->msgs->n == 0) return OV_GENAI_CHAT_HISTORY_EMPTY;
    *message = jc_wrap(jv_copy(history->msgs->items[0]));
    return OV_GENAI_CHAT_HISTORY_OK;
}
EXPORT ov_genai_chat_history_status_e ov_genai_chat_history_get_last(const ov_genai_chat_history* history, ov_genai_json_container** message) {
    if (!CH_OK(history) || !message) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    if (history->msgs->n == 0) return OV_GENAI_CHAT_HISTORY_EMPTY;
    *message = jc_wrap(jv_copy(history->msgs->items[history->msgs->n - 1]));
    return OV_GENAI_CHAT_HISTORY_OK;
}
EXPORT ov_genai_chat_history_status_e ov_genai_chat_history_clear(ov_genai_chat_history* history) {
    if (!CH_OK(history)) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    jv_free(history->msgs); history->msgs = jv_new(JARR);
    return OV_GENAI_CHAT_HISTORY_OK;
}
EXPORT ov_genai_chat_history_status_e ov_genai_chat_history_size(const ov_genai_chat_history* history, size_t* size) {
    if (!CH_OK(history) || !size) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    *size = history->msgs->n;
    return OV_GENAI_CHAT_HISTORY_OK;
}
EXPORT ov_genai_chat_history_status_e ov_genai_chat_history_empty(const ov_genai_chat_history* history, int* empty) {
    if (!CH_OK(history) || !empty) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    *empty = history->msgs->n == 0;
    return OV_GENAI_CHAT_HISTORY_OK;
}
EXPORT ov_genai_chat_history_status_e ov_genai_chat_history_set_tools(ov_genai_chat_history* history, const ov_genai_json_container* tools) {
    if (!CH_OK(history) || !JC_OK(tools)) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    if (tools->v->t != JARR) return OV_GENAI_CHAT_HISTORY_INVALID_JSON;
    jv_free(history->tools); history->tools = jv_copy(tools->v);
    return OV_GENAI_CHAT_HISTORY_OK;
}
EXPORT ov_genai_chat_history_status_e ov_genai_chat_history_get_tools(const ov_genai_chat_history* history, ov_genai_json_container** tools) {
    if (!CH_OK(history) || !tools) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    *tools = jc_wrap(jv_copy(history->tools));
    return OV_GENAI_CHAT_HISTORY_OK;
}
EXPORT ov_genai_chat_history_status_e ov_genai_chat_history_set_extra_context(ov_genai_chat_history* history, const ov_genai_json_container* extra_context) {
    if (!CH_OK(history) || !JC_OK(extra_context)) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    if (extra_context->v->t != JOBJ) return OV_GENAI_CHAT_HISTORY_INVALID_JSON;
    jv_free(history->extra); history->extra = jv_copy(extra_context->v);
    return OV_GENAI_CHAT_HISTORY_OK;
}
EXPORT ov_genai_chat_history_status_e ov_genai_chat_history_get_extra_context(const ov_genai_chat_history* history, ov_genai_json_container** extra_context) {
    if (!CH_OK(history) || !extra_context) return OV_GENAI_CHAT_HISTORY_INVALID_PARAM;
    int st = injected(__func__); if (st) return st;
    *extra_context = jc_wrap(jv_copy(history->extra));
    return OV_GENAI_CHAT_HISTORY_OK;
}

/* ------------------------------------------------------------------ decoded results */
#define RES_OK(h) ((h) && (h)->magic == MAGIC_RES)
static ov_genai_decoded_results* res_new(const char* text) {
    ov_genai_decoded_results* r = xmalloc(sizeof *r);
    r->magic = MAGIC_RES; r->text = xstrdup(text);
    memset(&r->p, 0, sizeof r->p);
    live_inc(K_RESULTS);
    return r;
}
EXPORT ov_status_e ov_genai_decoded_results_create(ov_genai_decoded_results** results) {
    if (!results) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    *results = res_new("");
    return OK;
}
EXPORT void ov_genai_decoded_results_free(ov_genai_decoded_results* results) {
    if (!RES_OK(results)) return;
    free(results->text); results->magic = 0; free(results);
    live_dec(K_RESULTS);
}
EXPORT ov_status_e ov_genai_decoded_results_get_perf_metrics(const ov_genai_decoded_results* results, ov_genai_perf_metrics** metrics) {
    if (!RES_OK(results) || !metrics) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    ov_genai_perf_metrics* m = xmalloc(sizeof *m);
    m->magic = MAGIC_PERF; m->p = results->p;
    live_inc(K_PERF);
    *metrics = m;
    return OK;
}
EXPORT void ov_genai_decoded_results_perf_metrics_free(ov_genai_perf_metrics* metrics) {
    if (!PERF_OK(metrics)) return;
    metrics->magic = 0; free(metrics);
    live_dec(K_PERF);
}
EXPORT ov_status_e ov_genai_decoded_results_get_string(const ov_genai_decoded_results* results, char* output, size_t* output_size) {
    if (!RES_OK(results) || !output_size) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    return two_call(results->text, output, output_size) ? OUT_OF_BOUNDS : OK;
}

/* ------------------------------------------------------------------ pipeline */
#define PIPE_OK(h) ((h) && (h)->magic == MAGIC_PIPE)
static void pipe_enter(ov_genai_llm_pipeline* p) {
    if (atomic_fetch_add(&p->in_call, 1) != 0) {
        pthread_mutex_lock(&g_mu); g_violations++; pthread_mutex_unlock(&g_mu);
    }
}
static void pipe_leave(ov_genai_llm_pipeline* p) { atomic_fetch_sub(&p->in_call, 1); }

/* start/finish chat and the config getter/setter of both pipeline kinds (one struct): `op` names the call in the
   thread log, `fn` in fault injection */
static ov_status_e pipe_switch_chat(ov_genai_llm_pipeline* pipe, const char* op, const char* fn, int on) {
    pipe_enter(pipe);
    tlog(op, pipe->serial);
    int st = injected(fn);
    if (!st) { pipe->chat_on = on; jv_free(pipe->chat); pipe->chat = on ? jv_new(JARR) : NULL; }
    pipe_leave(pipe);
    return st ? (ov_status_e)st : OK;
}
static ov_status_e pipe_get_config(ov_genai_llm_pipeline* p, const char* op, const char* fn,
                                   ov_genai_generation_config** config) {
    pipe_enter(p);
    tlog(op, p->serial);
    int st = injected(fn);
    if (!st) {
        ov_genai_generation_config* h = cfg_handle_new();
        cfg_copy(&h->c, &p->cfg);
        *config = h;
    }
    pipe_leave(p);
    return st ? (ov_status_e)st : OK;
}
static ov_status_e pipe_set_config(ov_genai_llm_pipeline* pipe, const char* op, const char* fn,
                                   ov_genai_generation_config* config) {
    pipe_enter(pipe);
    tlog(op, pipe->serial);
    int st = injected(fn);
    ov_status_e ret = OK;
    if (st) ret = (ov_status_e)st;
    else {
        gcfg_t c;
        cfg_copy(&c, &config->c);
        if (c.eos_token_id == -1 && pipe->cfg.eos_token_id != -1) cfg_set_eos(&c, pipe->cfg.eos_token_id);
        if (!cfg_valid(&c)) { cfg_clear(&c); ret = UNKNOW_EXCEPTION; }
        else { cfg_clear(&pipe->cfg); pipe->cfg = c; }
    }
    pipe_leave(pipe);
    return ret;
}

static const char* const k_props[] = {"CACHE_DIR", "PERFORMANCE_HINT", "INFERENCE_NUM_THREADS", "NUM_STREAMS",
                                      "ATTENTION_BACKEND", "ENABLE_MMAP", "INFERENCE_PRECISION_HINT",
                                      "KV_CACHE_PRECISION", "enable_save_ov_model"};
static int known_prop(const char* k) {
    for (size_t i = 0; i < sizeof k_props / sizeof *k_props; i++) if (strcmp(k, k_props[i]) == 0) return 1;
    return 0;
}
static int known_device(const char* d) {
    static const char* const devs[] = {"CPU", "GPU", "NPU", "AUTO"};
    for (int i = 0; i < 4; i++) {
        size_t n = strlen(devs[i]);
        if (strncmp(d, devs[i], n) == 0 && (d[n] == 0 || d[n] == '.' || d[n] == ':')) return 1;
    }
    return 0;
}

static ov_status_e pipe_create(const char* fn, unsigned magic, const char* models_path, const char* device,
                               size_t property_args_size, ov_genai_llm_pipeline** pipe, va_list ap) {
    /* upstream (src/c/src/llm_pipeline.cpp) rejects an odd property count together with the NULL checks: -14 */
    if (!pipe || !models_path || !device || property_args_size % 2 != 0) return INVALID_C_PARAM;
    int st = injected(fn); if (st) return st;
    struct stat sbuf;
    if (stat(models_path, &sbuf) != 0 || !S_ISDIR(sbuf.st_mode)) return UNKNOW_EXCEPTION;
    if (!known_device(device)) return UNKNOW_EXCEPTION;
    sb_t props = {0};
    int ok = 1;
    for (size_t i = 0; i < property_args_size; i += 2) {
        const char* k = va_arg(ap, const char*);
        const char* v = va_arg(ap, const char*);
        if (!ok) continue;
        if (!k || !v || !known_prop(k)) { ok = 0; continue; }
        sb_puts(&props, k); sb_putc(&props, '='); sb_puts(&props, v); sb_putc(&props, '\n');
    }
    if (!ok) { free(props.p); return UNKNOW_EXCEPTION; }
    gcfg_t cfg;
    size_t plen = strlen(models_path);
    char* cpath = xmalloc(plen + 40);
    snprintf(cpath, plen + 40, "%s/double_generation_config.json", models_path);
    if (access(cpath, F_OK) == 0) {
        if (!cfg_from_file(cpath, &cfg)) { free(cpath); free(props.p); return UNKNOW_EXCEPTION; }
    } else {
        cfg_defaults(&cfg); cfg_set_eos(&cfg, 2);
    }
    free(cpath);
    ov_genai_llm_pipeline* p = xmalloc(sizeof *p);
    memset(p, 0, sizeof *p);
    p->magic = magic;
    atomic_init(&p->in_call, 0);
    p->cfg = cfg;
    p->load_time = 12.5f;
    pthread_mutex_lock(&g_mu);
    p->serial = g_next_serial++;
    free(g_last_props); g_last_props = sb_take(&props);
    pthread_mutex_unlock(&g_mu);
    live_inc(magic == MAGIC_VPIP ? K_VLM_PIPELINE : K_PIPELINE);
    tlog(magic == MAGIC_VPIP ? "vlm_create" : "create", p->serial);
    *pipe = p;
    return OK;
}
EXPORT ov_status_e ov_genai_llm_pipeline_create(const char* models_path, const char* device, const size_t property_args_size, ov_genai_llm_pipeline** pipe, ...) {
    va_list ap;
    va_start(ap, pipe);
    ov_status_e st = pipe_create(__func__, MAGIC_PIPE, models_path, device, property_args_size, pipe, ap);
    va_end(ap);
    return st;
}
static void pipe_free(ov_genai_llm_pipeline* pipe, int vlm) {
    pipe_enter(pipe);
    tlog(vlm ? "vlm_free" : "free", pipe->serial);
    cfg_clear(&pipe->cfg);
    jv_free(pipe->chat);
    pipe->magic = 0;
    free(pipe);
    live_dec(vlm ? K_VLM_PIPELINE : K_PIPELINE);
}
EXPORT void ov_genai_llm_pipeline_free(ov_genai_llm_pipeline* pipe) {
    if (!PIPE_OK(pipe)) return;
    pipe_free(pipe, 0);
}

static size_t count_words(const char* s) {
    size_t n = 0; int in = 0;
    for (; *s; s++) {
        int sp = (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\f' || *s == '\v');
        if (!sp && !in) n++;
        in = !sp;
    }
    return n;
}
static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }

static jv* msg(const char* role, const char* content) {
    jv* o = jv_new(JOBJ);
    jv_set(o, "role", 4, jv_str(role, strlen(role)));
    jv_set(o, "content", 7, jv_str(content, strlen(content)));
    return o;
}

/* the shared generate engine. prompt: text whose words count as input tokens and that "Echo: " repeats */
static ov_status_e run_generate(ov_genai_llm_pipeline* pipe, const char* prompt, int append_chat,
                                const ov_genai_generation_config* config, const streamer_callback* streamer,
                                ov_genai_decoded_results** results) {
    gcfg_t c;
    cfg_copy(&c, config ? &config->c : &pipe->cfg);
    if (c.eos_token_id == -1 && pipe->cfg.eos_token_id != -1) cfg_set_eos(&c, pipe->cfg.eos_token_id);
    if (!cfg_valid(&c)) { cfg_clear(&c); return UNKNOW_EXCEPTION; }

    char* reply; size_t chunk; unsigned delay;
    pthread_mutex_lock(&g_mu);
    if (g_reply) reply = xstrdup(g_reply);
    else { size_t n = strlen(prompt) + 7; reply = xmalloc(n); snprintf(reply, n, "Echo: %s", prompt); }
    chunk = g_chunk_bytes; delay = g_delay_us;
    pthread_mutex_unlock(&g_mu);
    int mid_status = 0; long mid_k = 0;
    int mid = midstream_fault(&mid_status, &mid_k);

    size_t n_in = count_words(prompt);
    size_t limit;
    if (c.max_new_tokens != SIZE_MAX) limit = c.max_new_tokens;
    else if (c.max_length != SIZE_MAX) limit = c.max_length > n_in ? c.max_length - n_in : 0;
    else limit = SIZE_MAX;

    size_t rlen = strlen(reply), pos = 0, text_len = 0, emitted = 0;
    char* text = xmalloc(rlen + 1); text[0] = 0;
    int cancelled = 0, stopped = 0;
    ov_status_e ret = OK;
    while (pos < rlen && emitted < limit && !stopped) {
        if (mid && (long)emitted >= mid_k) { ret = (ov_status_e)mid_status; break; }
        size_t end;
        if (chunk) end = pos + chunk < rlen ? pos + chunk : rlen;
        else { end = pos; while (end < rlen && !is_ws(reply[end])) end++; while (end < rlen && is_ws(reply[end])) end++; }
        size_t prev = text_len;
        memcpy(text + text_len, reply + pos, end - pos);
        text_len += end - pos; text[text_len] = 0;
        pos = end;
        /* stop strings */
        size_t cut = text_len;
        for (size_t i = 0; i < c.n_stop_strings; i++) {
            const char* s = c.stop_strings[i];
            size_t sl = strlen(s);
            if (!sl) continue;
            char* f = strstr(text, s);
            if (f) {
                size_t at = (size_t)(f - text) + (c.include_stop_str_in_output ? sl : 0);
                if (at < cut) cut = at;
                stopped = 1;
            }
        }
        size_t send_to = cut > prev ? cut : prev;
        if (stopped) { text_len = cut; text[text_len] = 0; }
        emitted++;
        if (streamer && send_to > prev) {
            /* the accumulated text (before truncation) equals reply[0, pos) */
            char* piece = xstrndup(reply + prev, send_to - prev);
            ov_genai_streaming_status_e s = streamer->callback_func(piece, streamer->args);
            free(piece);
            pthread_mutex_lock(&g_mu); g_last_cb_status = (int)s; g_cb_count++; pthread_mutex_unlock(&g_mu);
            if (s == OV_GENAI_STREAMING_STATUS_STOP) stopped = 1;
            else if (s == OV_GENAI_STREAMING_STATUS_CANCEL) { stopped = 1; cancelled = 1; }
        }
        if (!stopped && delay && pos < rlen && emitted < limit) usleep(delay);
    }
    if (ret == OK && mid && !stopped) ret = (ov_status_e)mid_status; /* fewer tokens than k: fail at the end */
    if (ret == OK) {
        if (append_chat && pipe->chat_on && !cancelled) {
            jv_push(pipe->chat, msg("user", prompt));
            jv_push(pipe->chat, msg("assistant", text));
        }
        if (results) {
            sb_t out = {0};
            const char* body = text;
            char* echoed = NULL;
            if (c.echo) { size_t n = strlen(prompt) + text_len + 1; echoed = xmalloc(n); snprintf(echoed, n, "%s%s", prompt, text); body = echoed; }
            if (c.num_return_sequences > 1) {
                for (size_t i = 0; i < c.num_return_sequences; i++) {
                    char sc[32]; snprintf(sc, sizeof sc, "%f: ", -1.0);
                    if (i) sb_putc(&out, '\n');
                    sb_puts(&out, sc); sb_puts(&out, body);
                }
            } else sb_puts(&out, body);
            free(echoed);
            char* s = sb_take(&out);
            ov_genai_decoded_results* r = res_new(s);
            free(s);
            perf_fill(&r->p, pipe->load_time, n_in, emitted);
            *results = r;
        }
    }
    free(text); free(reply); cfg_clear(&c);
    return ret;
}

static void set_last_gen(int st) { pthread_mutex_lock(&g_mu); g_last_gen_status = st; pthread_mutex_unlock(&g_mu); }

EXPORT ov_status_e ov_genai_llm_pipeline_generate(ov_genai_llm_pipeline* pipe, const char* inputs, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_decoded_results** results) {
    ov_status_e ret;
    if (!PIPE_OK(pipe) || !inputs || (!streamer && !results) || (streamer && !streamer->callback_func) ||
        (config && !CFG_OK(config))) { set_last_gen(INVALID_C_PARAM); return INVALID_C_PARAM; }
    pipe_enter(pipe);
    tlog("generate", pipe->serial);
    int st = injected(__func__);
    if (st) ret = (ov_status_e)st;
    else ret = run_generate(pipe, inputs, 1, config, streamer, results);
    pipe_leave(pipe);
    set_last_gen(ret);
    return ret;
}
EXPORT ov_status_e ov_genai_llm_pipeline_generate_with_history(ov_genai_llm_pipeline* pipe, const ov_genai_chat_history* history, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_decoded_results** results) {
    ov_status_e ret;
    if (!PIPE_OK(pipe) || !CH_OK(history) || (!streamer && !results) || (streamer && !streamer->callback_func) ||
        (config && !CFG_OK(config))) { set_last_gen(INVALID_C_PARAM); return INVALID_C_PARAM; }
    pipe_enter(pipe);
    tlog("generate", pipe->serial);
    int st = injected(__func__);
    if (st) ret = (ov_status_e)st;
    else {
        const char* prompt = "";
        char* own = NULL;
        if (history->msgs->n) {
            jv* content = jv_get(history->msgs->items[history->msgs->n - 1], "content");
            if (content && content->t == JSTR) { own = xstrndup(content->s, strlen(content->s)); prompt = own; }
        }
        ret = run_generate(pipe, prompt, 0, config, streamer, results);
        free(own);
    }
    pipe_leave(pipe);
    set_last_gen(ret);
    return ret;
}
EXPORT ov_status_e ov_genai_llm_pipeline_start_chat(ov_genai_llm_pipeline* pipe) {
    if (!PIPE_OK(pipe)) return INVALID_C_PARAM;
    return pipe_switch_chat(pipe, "start_chat", __func__, 1);
}
EXPORT ov_status_e ov_genai_llm_pipeline_finish_chat(ov_genai_llm_pipeline* pipe) {
    if (!PIPE_OK(pipe)) return INVALID_C_PARAM;
    return pipe_switch_chat(pipe, "finish_chat", __func__, 0);
}
EXPORT ov_status_e ov_genai_llm_pipeline_get_generation_config(const ov_genai_llm_pipeline* pipe, ov_genai_generation_config** config) {
    if (!PIPE_OK(pipe) || !config) return INVALID_C_PARAM;
    return pipe_get_config((ov_genai_llm_pipeline*)pipe, "get_config", __func__, config);
}
EXPORT ov_status_e ov_genai_llm_pipeline_set_generation_config(ov_genai_llm_pipeline* pipe, ov_genai_generation_config* config) {
    if (!PIPE_OK(pipe) || !CFG_OK(config)) return INVALID_C_PARAM;
    return pipe_set_config(pipe, "set_config", __func__, config);
}

/* ------------------------------------------------------------------ vlm_pipeline.h */
#define VPIPE_OK(h) ((h) && (h)->magic == MAGIC_VPIP)
#define VRES_OK(h) ((h) && (h)->magic == MAGIC_VRES)

/* libopenvino_c's tensor getters, from the copy already mapped in the process (looked up until found) */
typedef struct { int64_t rank; int64_t* dims; } ovc_shape_t;
static struct {
    int ready;
    ov_status_e (*get_shape)(const ov_tensor_t*, ovc_shape_t*);
    ov_status_e (*get_type)(const ov_tensor_t*, int*);
    ov_status_e (*shape_free)(ovc_shape_t*);
} g_ovc;
static int find_openvino_c(struct dl_phdr_info* info, size_t size, void* data) {
    (void)size;
    const char* name = info->dlpi_name;
    if (!name || !*name) return 0;
    const char* base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (strncmp(base, "libopenvino_c.so", 16) != 0) return 0;
    snprintf((char*)data, 4096, "%s", name);
    return 1;
}
static int openvino_c_ready(void) {
    pthread_mutex_lock(&g_mu);
    if (!g_ovc.ready) {
        char path[4096] = "";
        dl_iterate_phdr(find_openvino_c, path);
        void* h = path[0] ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
        if (h) {
            *(void**)(&g_ovc.get_shape) = dlsym(h, "ov_tensor_get_shape");
            *(void**)(&g_ovc.get_type) = dlsym(h, "ov_tensor_get_element_type");
            *(void**)(&g_ovc.shape_free) = dlsym(h, "ov_shape_free");
            g_ovc.ready = g_ovc.get_shape && g_ovc.get_type && g_ovc.shape_free;
            dlclose(h); /* RTLD_NOLOAD took a reference; the library stays mapped by its own loader */
        }
    }
    int r = g_ovc.ready;
    pthread_mutex_unlock(&g_mu);
    return r;
}

#define OV_ELEMENT_U8 16 /* ov_element_type_e U8 */
/* checks the images and writes " [N images: HxWx3 ...]" into *desc (NULL for none) */
static ov_status_e describe_images(const ov_tensor_t** rgbs, size_t num_images, char** desc) {
    *desc = NULL;
    if (num_images == 0) return OK;
    if (!rgbs) return INVALID_C_PARAM;
    for (size_t i = 0; i < num_images; i++) if (!rgbs[i]) return INVALID_C_PARAM;
    if (!openvino_c_ready()) return GENERAL_ERROR;
    sb_t b = {0};
    char tmp[64];
    snprintf(tmp, sizeof tmp, " [%zu image%s:", num_images, num_images == 1 ? "" : "s");
    sb_puts(&b, tmp);
    for (size_t i = 0; i < num_images; i++) {
        int type = -1;
        ovc_shape_t shape = {0, NULL};
        if (g_ovc.get_type(rgbs[i], &type) != OK || g_ovc.get_shape(rgbs[i], &shape) != OK) {
            free(b.p); return INVALID_C_PARAM;
        }
        int ok = type == OV_ELEMENT_U8 && (shape.rank == 3 || shape.rank == 4) && shape.dims[shape.rank - 1] == 3;
        sb_putc(&b, ' ');
        for (int64_t d = 0; ok && d < shape.rank; d++) {
            snprintf(tmp, sizeof tmp, "%s%lld", d ? "x" : "", (long long)shape.dims[d]);
            sb_puts(&b, tmp);
        }
        g_ovc.shape_free(&shape);
        if (!ok) { free(b.p); return UNKNOW_EXCEPTION; }
    }
    sb_putc(&b, ']');
    *desc = sb_take(&b);
    return OK;
}
static ov_genai_vlm_decoded_results* as_vlm_results(ov_genai_decoded_results* r) {
    r->magic = MAGIC_VRES;
    live_dec(K_RESULTS); live_inc(K_VLM_RESULTS);
    return r;
}
static ov_status_e vlm_run(ov_genai_vlm_pipeline* pipe, const char* prompt, int append_chat, const ov_tensor_t** rgbs,
                           size_t num_images, const ov_genai_generation_config* config,
                           const streamer_callback* streamer, ov_genai_vlm_decoded_results** results) {
    char* desc;
    ov_status_e ret = describe_images(rgbs, num_images, &desc);
    if (ret != OK) return ret;
    size_t n = strlen(prompt) + (desc ? strlen(desc) : 0) + 1;
    char* full = xmalloc(n);
    snprintf(full, n, "%s%s", prompt, desc ? desc : "");
    free(desc);
    ov_genai_decoded_results* r = NULL;
    ret = run_generate(pipe, full, append_chat, config, streamer, results ? &r : NULL);
    free(full);
    if (ret == OK && results && r) *results = as_vlm_results(r);
    return ret;
}

EXPORT ov_status_e ov_genai_vlm_decoded_results_create(ov_genai_vlm_decoded_results** results) {
    if (!results) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    *results = as_vlm_results(res_new(""));
    return OK;
}
EXPORT void ov_genai_vlm_decoded_results_free(ov_genai_vlm_decoded_results* results) {
    if (!VRES_OK(results)) return;
    free(results->text); results->magic = 0; free(results);
    live_dec(K_VLM_RESULTS);
}
EXPORT ov_status_e ov_genai_vlm_decoded_results_get_perf_metrics(const ov_genai_vlm_decoded_results* results, ov_genai_perf_metrics** metrics) {
    if (!VRES_OK(results) || !metrics) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    ov_genai_perf_metrics* m = xmalloc(sizeof *m);
    m->magic = MAGIC_PERF; m->p = results->p;
    live_inc(K_PERF);
    *metrics = m;
    return OK;
}
EXPORT void ov_genai_vlm_decoded_results_perf_metrics_free(ov_genai_perf_metrics* metrics) {
    if (!PERF_OK(metrics)) return;
    metrics->magic = 0; free(metrics);
    live_dec(K_PERF);
}
EXPORT ov_status_e ov_genai_vlm_decoded_results_get_string(const ov_genai_vlm_decoded_results* results, char* output, size_t* output_size) {
    if (!VRES_OK(results) || !output_size) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    return two_call(results->text, output, output_size) ? OUT_OF_BOUNDS : OK;
}
EXPORT ov_status_e ov_genai_vlm_pipeline_create(const char* models_path, const char* device, const size_t property_args_size, ov_genai_vlm_pipeline** pipe, ...) {
    va_list ap;
    va_start(ap, pipe);
    ov_status_e st = pipe_create(__func__, MAGIC_VPIP, models_path, device, property_args_size, pipe, ap);
    va_end(ap);
    return st;
}
EXPORT void ov_genai_vlm_pipeline_free(ov_genai_vlm_pipeline* pipe) {
    if (!VPIPE_OK(pipe)) return;
    pipe_free(pipe, 1);
}
EXPORT ov_status_e ov_genai_vlm_pipeline_generate(ov_genai_vlm_pipeline* pipe, const char* text_inputs, const ov_tensor_t** rgbs, size_t num_images, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_vlm_decoded_results** results) {
    ov_status_e ret;
    if (!VPIPE_OK(pipe) || !text_inputs || (!streamer && !results) || (streamer && !streamer->callback_func) ||
        (config && !CFG_OK(config))) { set_last_gen(INVALID_C_PARAM); return INVALID_C_PARAM; }
    pipe_enter(pipe);
    tlog("vlm_generate", pipe->serial);
    int st = injected(__func__);
    if (st) ret = (ov_status_e)st;
    else ret = vlm_run(pipe, text_inputs, 1, rgbs, num_images, config, streamer, results);
    pipe_leave(pipe);
    set_last_gen(ret);
    return ret;
}
EXPORT ov_status_e ov_genai_vlm_pipeline_generate_with_history(ov_genai_vlm_pipeline* pipe, const ov_genai_chat_history* history, const ov_tensor_t** rgbs, size_t num_images, const ov_genai_generation_config* config, const streamer_callback* streamer, ov_genai_vlm_decoded_results** results) {
    ov_status_e ret;
    if (!VPIPE_OK(pipe) || !CH_OK(history) || (!streamer && !results) || (streamer && !streamer->callback_func) ||
        (config && !CFG_OK(config))) { set_last_gen(INVALID_C_PARAM); return INVALID_C_PARAM; }
    pipe_enter(pipe);
    tlog("vlm_generate", pipe->serial);
    int st = injected(__func__);
    if (st) ret = (ov_status_e)st;
    else {
        const char* prompt = "";
        char* own = NULL;
        if (history->msgs->n) {
            jv* content = jv_get(history->msgs->items[history->msgs->n - 1], "content");
            if (content && content->t == JSTR) { own = xstrndup(content->s, strlen(content->s)); prompt = own; }
        }
        ret = vlm_run(pipe, prompt, 0, rgbs, num_images, config, streamer, results);
        free(own);
    }
    pipe_leave(pipe);
    set_last_gen(ret);
    return ret;
}
EXPORT ov_status_e ov_genai_vlm_pipeline_start_chat(ov_genai_vlm_pipeline* pipe) {
    if (!VPIPE_OK(pipe)) return INVALID_C_PARAM;
    return pipe_switch_chat(pipe, "vlm_start_chat", __func__, 1);
}
EXPORT ov_status_e ov_genai_vlm_pipeline_finish_chat(ov_genai_vlm_pipeline* pipe) {
    if (!VPIPE_OK(pipe)) return INVALID_C_PARAM;
    return pipe_switch_chat(pipe, "vlm_finish_chat", __func__, 0);
}
EXPORT ov_status_e ov_genai_vlm_pipeline_get_generation_config(const ov_genai_vlm_pipeline* pipe, ov_genai_generation_config** config) {
    if (!VPIPE_OK(pipe) || !config) return INVALID_C_PARAM;
    return pipe_get_config((ov_genai_vlm_pipeline*)pipe, "vlm_get_config", __func__, config);
}
EXPORT ov_status_e ov_genai_vlm_pipeline_set_generation_config(ov_genai_vlm_pipeline* pipe, ov_genai_generation_config* config) {
    if (!VPIPE_OK(pipe) || !CFG_OK(config)) return INVALID_C_PARAM;
    return pipe_set_config(pipe, "vlm_set_config", __func__, config);
}

/* ------------------------------------------------------------------ Whisper
 * whisper_generation_config.h + whisper_pipeline.h (57 functions), documented choices:
 *  - A config holds the Whisper fields, the base fields the double uses (max_new_tokens, max_length, eos_token_id)
 *    and lang_to_id (a JSON object, no C setter: as upstream). create: C++ defaults, max_length 448, lang_to_id
 *    empty (upstream's C source). create_from_json: the file's decoder_start/pad/no_timestamps/prev_sot token ids,
 *    max_initial_timestamp_index, is_multilingual, task_to_id.transcribe/.translate (when multilingual), lang_to_id,
 *    begin_suppress_tokens, suppress_tokens, max_new_tokens, max_length, eos_token_id; unreadable, not an object or
 *    a wrong type -> UNKNOW_EXCEPTION. get_generation_config: a new base config (max_new_tokens, max_length, eos).
 *  - validate: upstream's WhisperGenerationConfig rules (multilingual needs a non-empty lang_to_id; a language,
 *    plain "en" or wrapped "<|en|>", must be in it; task is transcribe or translate; no language / task when not
 *    multilingual) and a length limit (eos set, or max_new_tokens / max_length not unlimited) -> -17 when broken.
 *  - Pipeline create: as the LLM's (folder, device, properties); its config is <models_path>/generation_config.json
 *    when present (read as create_from_json), else the defaults with eos 50257, max_length 448 and lang_to_id
 *    {<|en|>: 50259, <|de|>: 50261, <|fr|>: 50265}.
 *  - generate: NULL speech / results -> -14; a non-Whisper config handle -> -14; 0 samples -> UNKNOW_EXCEPTION (the
 *    double's choice); a passed config gets the pipeline's eos when unset, then validate (-17). No streamer, no
 *    cancellation (as the ABI). Sleeps ovd_set_token_delay_us once per call (to test abandoned waits).
 *    texts = {ovd_set_reply text, else " <task> <lang|auto> <N> samples sum <sum> peak <max |x|>[ prompt <p>]
 *    [ hotwords <h>]"} (task "transcribe" when unset, language as its plain code, sum / peak with %.4f), scores {1}.
 *    return_timestamps: one chunk per 30 s window (480000 samples): start i*30, end min((i+1)*30, N/16000),
 *    text " window <i> <samples> samples"; chunks unset otherwise (has_chunks false, count 0, get_chunk_at NOT_FOUND).
 *    get_string: the text (several texts never happen). Perf: the LLM's fixed values, input tokens 0, generation
 *    tokens = words of the text; free it with ov_genai_decoded_results_perf_metrics_free.
 *  - Thread log ops "whisper_create", "whisper_generate", "whisper_get_config", "whisper_set_config",
 *    "whisper_free"; live kinds "whisper_config", "whisper_pipeline", "whisper_results", "whisper_chunk".
 */
#define MAGIC_WCFG 0x57434647u
#define MAGIC_WPIP 0x57504950u
#define MAGIC_WRES 0x57524553u
#define MAGIC_WCHK 0x5743484bu
#define WHISPER_RATE 16000
#define WHISPER_WINDOW (30 * WHISPER_RATE)

typedef struct ov_genai_whisper_generation_config_opaque ov_genai_whisper_generation_config;
typedef struct ov_genai_whisper_decoded_result_chunk_opaque ov_genai_whisper_decoded_result_chunk;
typedef struct ov_genai_whisper_decoded_results_opaque ov_genai_whisper_decoded_results;
typedef struct ov_genai_whisper_pipeline_opaque ov_genai_whisper_pipeline;

typedef struct {
    int64_t decoder_start_token_id, pad_token_id, translate_token_id, transcribe_token_id, prev_sot_token_id;
    int64_t no_timestamps_token_id;
    size_t max_initial_timestamp_index;
    bool is_multilingual, return_timestamps;
    char *language, *task, *initial_prompt, *hotwords; /* NULL: unset */
    int64_t* begin_suppress_tokens; size_t n_begin_suppress_tokens;
    int64_t* suppress_tokens; size_t n_suppress_tokens;
    size_t max_new_tokens, max_length;
    int64_t eos_token_id;
    jv* lang_to_id; /* JOBJ */
} wcfg_t;
struct ov_genai_whisper_generation_config_opaque { unsigned magic; wcfg_t c; };
struct ov_genai_whisper_decoded_result_chunk_opaque { unsigned magic; float start_ts, end_ts; char* text; };
struct ov_genai_whisper_decoded_results_opaque {
    unsigned magic;
    size_t n_texts; char* text; float score;
    int has_chunks; size_t n_chunks; float* starts; float* ends; char** chunk_texts;
    perf_t p;
};
struct ov_genai_whisper_pipeline_opaque { unsigned magic; long serial; atomic_int in_call; wcfg_t cfg; float load_time; };

#define WCFG_OK(h) ((h) && (h)->magic == MAGIC_WCFG)
#define WPIPE_OK(h) ((h) && (h)->magic == MAGIC_WPIP)
#define WRES_OK(h) ((h) && (h)->magic == MAGIC_WRES)
#define WCHK_OK(h) ((h) && (h)->magic == MAGIC_WCHK)

static void wcfg_defaults(wcfg_t* c) {
    memset(c, 0, sizeof *c);
    c->decoder_start_token_id = 50258; c->pad_token_id = 50257; c->translate_token_id = 50358;
    c->transcribe_token_id = 50359; c->prev_sot_token_id = 50361; c->no_timestamps_token_id = 50363;
    c->max_initial_timestamp_index = 50; c->is_multilingual = true;
    c->max_new_tokens = SIZE_MAX; c->max_length = SIZE_MAX; c->eos_token_id = -1;
    c->lang_to_id = jv_new(JOBJ);
}
static char* dup_or_null(const char* s) { return s ? xstrdup(s) : NULL; }
static int64_t* dup_ids(const int64_t* ids, size_t n) {
    if (!n) return NULL;
    int64_t* r = xmalloc(n * sizeof *r); memcpy(r, ids, n * sizeof *r); return r;
}
static void wcfg_clear(wcfg_t* c) {
    free(c->language); free(c->task); free(c->initial_prompt); free(c->hotwords);
    free(c->begin_suppress_tokens); free(c->suppress_tokens); jv_free(c->lang_to_id);
    memset(c, 0, sizeof *c);
}
static void wcfg_copy(wcfg_t* dst, const wcfg_t* src) {
    *dst = *src;
    dst->language = dup_or_null(src->language); dst->task = dup_or_null(src->task);
    dst->initial_prompt = dup_or_null(src->initial_prompt); dst->hotwords = dup_or_null(src->hotwords);
    dst->begin_suppress_tokens = dup_ids(src->begin_suppress_tokens, src->n_begin_suppress_tokens);
    dst->suppress_tokens = dup_ids(src->suppress_tokens, src->n_suppress_tokens);
    dst->lang_to_id = jv_copy(src->lang_to_id);
}
static ov_genai_whisper_generation_config* wcfg_handle(const wcfg_t* c) {
    ov_genai_whisper_generation_config* h = xmalloc(sizeof *h);
    h->magic = MAGIC_WCFG; h->c = *c;
    live_inc(K_WHISPER_CONFIG);
    return h;
}
/* a JSON array of integers into (ids, n); 0 when it is not one */
static int read_ids(const jv* a, int64_t** ids, size_t* n) {
    if (!a || a->t != JARR) return 0;
    int64_t* r = a->n ? xmalloc(a->n * sizeof *r) : NULL;
    for (size_t i = 0; i < a->n; i++) {
        if (a->items[i]->t != JINT) { free(r); return 0; }
        r[i] = a->items[i]->i;
    }
    *ids = r; *n = a->n;
    return 1;
}
static int wcfg_from_file(const char* path, wcfg_t* c) {
    FILE* f = fopen(path, "rb");
    if (!f) return 0;
    sb_t b = {0}; char buf[4096]; size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) sb_put(&b, buf, n);
    fclose(f);
    jv* v = json_parse(b.p ? b.p : "", b.n);
    free(b.p);
    if (!v || v->t != JOBJ) { jv_free(v); return 0; }
    wcfg_defaults(c);
    int ok = 1; double d;
#define WI(name) do { int r = jnum(jv_get(v, #name), &d); if (r < 0) ok = 0; else if (r) c->name = (int64_t)d; } while (0)
#define WS(name) do { int r = jnum(jv_get(v, #name), &d); if (r < 0 || (r && d < 0)) ok = 0; else if (r) c->name = d >= 1.8e19 ? SIZE_MAX : (size_t)d; } while (0)
    WI(decoder_start_token_id); WI(pad_token_id); WI(no_timestamps_token_id); WI(prev_sot_token_id);
    WS(max_initial_timestamp_index); WS(max_new_tokens); WS(max_length);
#undef WI
#undef WS
    jv* ml = jv_get(v, "is_multilingual");
    if (ml && ml->t == JBOOL) c->is_multilingual = ml->b; else if (ml && ml->t != JNULL) ok = 0;
    jv* tasks = jv_get(v, "task_to_id");
    if (c->is_multilingual && tasks && tasks->t == JOBJ) {
        if (jnum(jv_get(tasks, "transcribe"), &d) > 0) c->transcribe_token_id = (int64_t)d;
        if (jnum(jv_get(tasks, "translate"), &d) > 0) c->translate_token_id = (int64_t)d;
    }
    jv* langs = jv_get(v, "lang_to_id");
    if (langs && langs->t == JOBJ) { jv_free(c->lang_to_id); c->lang_to_id = jv_copy(langs); }
    else if (langs && langs->t != JNULL) ok = 0;
    jv* e = jv_get(v, "eos_token_id");
    if (e && e->t == JINT) c->eos_token_id = e->i; else if (e && e->t != JNULL) ok = 0;
    jv* bs = jv_get(v, "begin_suppress_tokens");
    if (bs && bs->t != JNULL && !read_ids(bs, &c->begin_suppress_tokens, &c->n_begin_suppress_tokens)) ok = 0;
    jv* su = jv_get(v, "suppress_tokens");
    if (su && su->t != JNULL && !read_ids(su, &c->suppress_tokens, &c->n_suppress_tokens)) ok = 0;
    jv_free(v);
    if (!ok) wcfg_clear(c);
    return ok;
}
/* the language as lang_to_id's key ("<|en|>"), newly allocated */
static char* wrapped_language(const char* lang) {
    size_t n = strlen(lang);
    if (n > 4 && strncmp(lang, "<|", 2) == 0 && strcmp(lang + n - 2, "|>") == 0) return xstrdup(lang);
    char* r = xmalloc(n + 5);
    snprintf(r, n + 5, "<|%s|>", lang);
    return r;
}
static int wcfg_valid(const wcfg_t* c) {
    if (c->eos_token_id == -1 && c->max_new_tokens == SIZE_MAX && c->max_length == SIZE_MAX) return 0;
    if (c->max_new_tokens == 0) return 0;
    if (c->is_multilingual && c->lang_to_id->n == 0) return 0;
    if (c->is_multilingual && c->language) {
        char* key = wrapped_language(c->language);
        int found = jv_get(c->lang_to_id, key) != NULL;
        free(key);
        if (!found) return 0;
    }
    if (c->is_multilingual && c->task && strcmp(c->task, "transcribe") != 0 && strcmp(c->task, "translate") != 0)
        return 0;
    if (!c->is_multilingual && (c->language || c->task)) return 0;
    return 1;
}

EXPORT ov_status_e ov_genai_whisper_generation_config_create(ov_genai_whisper_generation_config** config) {
    if (!config) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    wcfg_t c; wcfg_defaults(&c); c.max_length = 448;
    *config = wcfg_handle(&c);
    return OK;
}
EXPORT ov_status_e ov_genai_whisper_generation_config_create_from_json(const char* json_path, ov_genai_whisper_generation_config** config) {
    if (!config || !json_path) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    wcfg_t c;
    if (!wcfg_from_file(json_path, &c)) return UNKNOW_EXCEPTION;
    *config = wcfg_handle(&c);
    return OK;
}
EXPORT void ov_genai_whisper_generation_config_free(ov_genai_whisper_generation_config* config) {
    if (!WCFG_OK(config)) return;
    wcfg_clear(&config->c); config->magic = 0; free(config);
    live_dec(K_WHISPER_CONFIG);
}
EXPORT ov_status_e ov_genai_whisper_generation_config_get_generation_config(const ov_genai_whisper_generation_config* config, ov_genai_generation_config** generation_config) {
    if (!WCFG_OK(config) || !generation_config) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    ov_genai_generation_config* h = cfg_handle_new();
    h->c.max_new_tokens = config->c.max_new_tokens; h->c.max_length = config->c.max_length;
    if (config->c.eos_token_id != -1) cfg_set_eos(&h->c, config->c.eos_token_id);
    *generation_config = h;
    return OK;
}
#define WCFG_SCALAR(field, type)                                                                                     \
    EXPORT ov_status_e ov_genai_whisper_generation_config_set_##field(ov_genai_whisper_generation_config* config,  \
                                                                       type value) {                               \
        if (!WCFG_OK(config)) return INVALID_C_PARAM;                                                              \
        int st = injected(__func__); if (st) return st;                                                            \
        config->c.field = value; return OK;                                                                        \
    }                                                                                                              \
    EXPORT ov_status_e ov_genai_whisper_generation_config_get_##field(                                             \
        const ov_genai_whisper_generation_config* config, type* value) {                                           \
        if (!WCFG_OK(config) || !value) return INVALID_C_PARAM;                                                    \
        int st = injected(__func__); if (st) return st;                                                            \
        *value = config->c.field; return OK;                                                                       \
    }
WCFG_SCALAR(decoder_start_token_id, int64_t)
WCFG_SCALAR(pad_token_id, int64_t)
WCFG_SCALAR(translate_token_id, int64_t)
WCFG_SCALAR(transcribe_token_id, int64_t)
WCFG_SCALAR(prev_sot_token_id, int64_t)
WCFG_SCALAR(no_timestamps_token_id, int64_t)
WCFG_SCALAR(max_initial_timestamp_index, size_t)
WCFG_SCALAR(is_multilingual, bool)
WCFG_SCALAR(return_timestamps, bool)
#undef WCFG_SCALAR
/* optional strings: set NULL unsets; get of an unset one is NOT_FOUND; two-call sizing */
#define WCFG_STRING(field)                                                                                           \
    EXPORT ov_status_e ov_genai_whisper_generation_config_set_##field(ov_genai_whisper_generation_config* config,  \
                                                                       const char* value) {                        \
        if (!WCFG_OK(config)) return INVALID_C_PARAM;                                                              \
        int st = injected(__func__); if (st) return st;                                                            \
        free(config->c.field); config->c.field = dup_or_null(value); return OK;                                    \
    }                                                                                                              \
    EXPORT ov_status_e ov_genai_whisper_generation_config_get_##field(                                             \
        const ov_genai_whisper_generation_config* config, char* value, size_t* value_size) {                       \
        if (!WCFG_OK(config) || !value_size) return INVALID_C_PARAM;                                               \
        int st = injected(__func__); if (st) return st;                                                            \
        if (!config->c.field) return NOT_FOUND;                                                                    \
        return two_call(config->c.field, value, value_size) ? OUT_OF_BOUNDS : OK;                                  \
    }
WCFG_STRING(language)
WCFG_STRING(task)
WCFG_STRING(initial_prompt)
WCFG_STRING(hotwords)
#undef WCFG_STRING
/* token lists: set replaces (NULL or 0: empty); get needs a non-NULL array of at least the count */
#define WCFG_TOKENS(field)                                                                                           \
    EXPORT ov_status_e ov_genai_whisper_generation_config_set_##field(ov_genai_whisper_generation_config* config,  \
                                                                       const int64_t* tokens, size_t tokens_count) \
    {                                                                                                              \
        if (!WCFG_OK(config)) return INVALID_C_PARAM;                                                              \
        int st = injected(__func__); if (st) return st;                                                            \
        free(config->c.field);                                                                                     \
        config->c.n_##field = tokens ? tokens_count : 0;                                                           \
        config->c.field = dup_ids(tokens, config->c.n_##field);                                                    \
        return OK;                                                                                                 \
    }                                                                                                              \
    EXPORT ov_status_e ov_genai_whisper_generation_config_get_##field##_count(                                     \
        const ov_genai_whisper_generation_config* config, size_t* tokens_count) {                                  \
        if (!WCFG_OK(config) || !tokens_count) return INVALID_C_PARAM;                                             \
        int st = injected(__func__); if (st) return st;                                                            \
        *tokens_count = config->c.n_##field; return OK;                                                            \
    }                                                                                                              \
    EXPORT ov_status_e ov_genai_whisper_generation_config_get_##field(                                             \
        const ov_genai_whisper_generation_config* config, int64_t* tokens, size_t tokens_count) {                  \
        if (!WCFG_OK(config) || !tokens) return INVALID_C_PARAM;                                                   \
        int st = injected(__func__); if (st) return st;                                                            \
        if (tokens_count < config->c.n_##field) return OUT_OF_BOUNDS;                                              \
        if (config->c.n_##field) memcpy(tokens, config->c.field, config->c.n_##field * sizeof *tokens);            \
        return OK;                                                                                                 \
    }
WCFG_TOKENS(begin_suppress_tokens)
WCFG_TOKENS(suppress_tokens)
#undef WCFG_TOKENS
EXPORT ov_status_e ov_genai_whisper_generation_config_validate(ov_genai_whisper_generation_config* config) {
    if (!WCFG_OK(config)) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    return wcfg_valid(&config->c) ? OK : UNKNOW_EXCEPTION;
}

/* chunks and results */
static ov_genai_whisper_decoded_result_chunk* wchunk_new(float start, float end, const char* text) {
    ov_genai_whisper_decoded_result_chunk* c = xmalloc(sizeof *c);
    c->magic = MAGIC_WCHK; c->start_ts = start; c->end_ts = end; c->text = xstrdup(text);
    live_inc(K_WHISPER_CHUNK);
    return c;
}
EXPORT ov_status_e ov_genai_whisper_decoded_result_chunk_create(ov_genai_whisper_decoded_result_chunk** chunk) {
    if (!chunk) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    *chunk = wchunk_new(0.0f, -1.0f, ""); /* upstream's defaults: end_ts -1 */
    return OK;
}
EXPORT void ov_genai_whisper_decoded_result_chunk_free(ov_genai_whisper_decoded_result_chunk* chunk) {
    if (!WCHK_OK(chunk)) return;
    free(chunk->text); chunk->magic = 0; free(chunk);
    live_dec(K_WHISPER_CHUNK);
}
EXPORT ov_status_e ov_genai_whisper_decoded_result_chunk_get_start_ts(const ov_genai_whisper_decoded_result_chunk* chunk, float* start_ts) {
    if (!WCHK_OK(chunk) || !start_ts) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    *start_ts = chunk->start_ts; return OK;
}
EXPORT ov_status_e ov_genai_whisper_decoded_result_chunk_get_end_ts(const ov_genai_whisper_decoded_result_chunk* chunk, float* end_ts) {
    if (!WCHK_OK(chunk) || !end_ts) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    *end_ts = chunk->end_ts; return OK;
}
EXPORT ov_status_e ov_genai_whisper_decoded_result_chunk_get_text(const ov_genai_whisper_decoded_result_chunk* chunk, char* text, size_t* text_size) {
    if (!WCHK_OK(chunk) || !text_size) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    return two_call(chunk->text, text, text_size) ? OUT_OF_BOUNDS : OK;
}
static ov_genai_whisper_decoded_results* wres_new(void) {
    ov_genai_whisper_decoded_results* r = xmalloc(sizeof *r);
    memset(r, 0, sizeof *r);
    r->magic = MAGIC_WRES; r->text = xstrdup("");
    live_inc(K_WHISPER_RESULTS);
    return r;
}
EXPORT ov_status_e ov_genai_whisper_decoded_results_create(ov_genai_whisper_decoded_results** results) {
    if (!results) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    *results = wres_new();
    return OK;
}
EXPORT void ov_genai_whisper_decoded_results_free(ov_genai_whisper_decoded_results* results) {
    if (!WRES_OK(results)) return;
    for (size_t i = 0; i < results->n_chunks; i++) free(results->chunk_texts[i]);
    free(results->chunk_texts); free(results->starts); free(results->ends); free(results->text);
    results->magic = 0; free(results);
    live_dec(K_WHISPER_RESULTS);
}
EXPORT ov_status_e ov_genai_whisper_decoded_results_get_perf_metrics(const ov_genai_whisper_decoded_results* results, ov_genai_perf_metrics** metrics) {
    if (!WRES_OK(results) || !metrics) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    ov_genai_perf_metrics* m = xmalloc(sizeof *m);
    m->magic = MAGIC_PERF; m->p = results->p;
    live_inc(K_PERF);
    *metrics = m;
    return OK;
}
EXPORT ov_status_e ov_genai_whisper_decoded_results_get_texts_count(const ov_genai_whisper_decoded_results* results, size_t* count) {
    if (!WRES_OK(results) || !count) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    *count = results->n_texts; return OK;
}
EXPORT ov_status_e ov_genai_whisper_decoded_results_get_text_at(const ov_genai_whisper_decoded_results* results, size_t index, char* text, size_t* text_size) {
    if (!WRES_OK(results) || !text_size) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    if (index >= results->n_texts) return OUT_OF_BOUNDS;
    return two_call(results->text, text, text_size) ? OUT_OF_BOUNDS : OK;
}
EXPORT ov_status_e ov_genai_whisper_decoded_results_get_score_at(const ov_genai_whisper_decoded_results* results, size_t index, float* score) {
    if (!WRES_OK(results) || !score) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    if (index >= results->n_texts) return OUT_OF_BOUNDS;
    *score = results->score; return OK;
}
EXPORT ov_status_e ov_genai_whisper_decoded_results_has_chunks(const ov_genai_whisper_decoded_results* results, bool* has_chunks) {
    if (!WRES_OK(results) || !has_chunks) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    *has_chunks = results->has_chunks != 0; return OK;
}
EXPORT ov_status_e ov_genai_whisper_decoded_results_get_chunks_count(const ov_genai_whisper_decoded_results* results, size_t* count) {
    if (!WRES_OK(results) || !count) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    *count = results->has_chunks ? results->n_chunks : 0; return OK;
}
EXPORT ov_status_e ov_genai_whisper_decoded_results_get_chunk_at(const ov_genai_whisper_decoded_results* results, size_t index, ov_genai_whisper_decoded_result_chunk** chunk) {
    if (!WRES_OK(results) || !chunk) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    if (!results->has_chunks) return NOT_FOUND;
    if (index >= results->n_chunks) return OUT_OF_BOUNDS;
    *chunk = wchunk_new(results->starts[index], results->ends[index], results->chunk_texts[index]);
    return OK;
}
EXPORT ov_status_e ov_genai_whisper_decoded_results_get_string(const ov_genai_whisper_decoded_results* results, char* output, size_t* output_size) {
    if (!WRES_OK(results) || !output_size) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    return two_call(results->n_texts ? results->text : "", output, output_size) ? OUT_OF_BOUNDS : OK;
}

/* pipeline */
static void wpipe_enter(ov_genai_whisper_pipeline* p) {
    if (atomic_fetch_add(&p->in_call, 1) != 0) {
        pthread_mutex_lock(&g_mu); g_violations++; pthread_mutex_unlock(&g_mu);
    }
}
static void wpipe_leave(ov_genai_whisper_pipeline* p) { atomic_fetch_sub(&p->in_call, 1); }

EXPORT ov_status_e ov_genai_whisper_pipeline_create(const char* models_path, const char* device, const size_t property_args_size, ov_genai_whisper_pipeline** pipeline, ...) {
    if (!models_path || !device || !pipeline || property_args_size % 2 != 0) return INVALID_C_PARAM;
    int st = injected(__func__); if (st) return st;
    struct stat sbuf;
    if (stat(models_path, &sbuf) != 0 || !S_ISDIR(sbuf.st_mode)) return UNKNOW_EXCEPTION;
    if (!known_device(device)) return UNKNOW_EXCEPTION;
    sb_t props = {0};
    int ok = 1;
    va_list ap;
    va_start(ap, pipeline);
    for (size_t i = 0; i < property_args_size; i += 2) {
        const char* k = va_arg(ap, const char*);
        const char* v = va_arg(ap, const char*);
        if (!ok) continue;
        if (!k || !v || !known_prop(k)) { ok = 0; continue; }
        sb_puts(&props, k); sb_putc(&props, '='); sb_puts(&props, v); sb_putc(&props, '\n');
    }
    va_end(ap);
    if (!ok) { free(props.p); return UNKNOW_EXCEPTION; }
    wcfg_t cfg;
    size_t plen = strlen(models_path);
    char* cpath = xmalloc(plen + 32);
    snprintf(cpath, plen + 32, "%s/generation_config.json", models_path);
    if (access(cpath, F_OK) == 0) {
        if (!wcfg_from_file(cpath, &cfg)) { free(cpath); free(props.p); return UNKNOW_EXCEPTION; }
    } else {
        wcfg_defaults(&cfg);
        cfg.eos_token_id = 50257; cfg.max_length = 448;
        jv_set(cfg.lang_to_id, "<|en|>", 6, jv_new(JINT)); cfg.lang_to_id->items[0]->i = 50259;
        jv_set(cfg.lang_to_id, "<|de|>", 6, jv_new(JINT)); cfg.lang_to_id->items[1]->i = 50261;
        jv_set(cfg.lang_to_id, "<|fr|>", 6, jv_new(JINT)); cfg.lang_to_id->items[2]->i = 50265;
    }
    free(cpath);
    ov_genai_whisper_pipeline* p = xmalloc(sizeof *p);
    memset(p, 0, sizeof *p);
    p->magic = MAGIC_WPIP;
    atomic_init(&p->in_call, 0);
    p->cfg = cfg;
    p->load_time = 12.5f;
    pthread_mutex_lock(&g_mu);
    p->serial = g_next_serial++;
    free(g_last_props); g_last_props = sb_take(&props);
    pthread_mutex_unlock(&g_mu);
    live_inc(K_WHISPER_PIPELINE);
    tlog("whisper_create", p->serial);
    *pipeline = p;
    return OK;
}
EXPORT void ov_genai_whisper_pipeline_free(ov_genai_whisper_pipeline* pipeline) {
    if (!WPIPE_OK(pipeline)) return;
    wpipe_enter(pipeline);
    tlog("whisper_free", pipeline->serial);
    wcfg_clear(&pipeline->cfg);
    pipeline->magic = 0;
    free(pipeline);
    live_dec(K_WHISPER_PIPELINE);
}
/* the fake transcription of raw_speech under config c (see the section comment) */
static ov_genai_whisper_decoded_results* whisper_transcribe(const float* raw, size_t n, const wcfg_t* c,
                                                            float load_time) {
    ov_genai_whisper_decoded_results* r = wres_new();
    pthread_mutex_lock(&g_mu);
    char* reply = g_reply ? xstrdup(g_reply) : NULL;
    unsigned int delay = g_delay_us;
    pthread_mutex_unlock(&g_mu);
    if (delay) usleep(delay);
    if (!reply) {
        double sum = 0.0, peak = 0.0;
        for (size_t i = 0; i < n; i++) { sum += raw[i]; if (fabs(raw[i]) > peak) peak = fabs(raw[i]); }
        char* lang = NULL;
        if (c->language) {
            char* w = wrapped_language(c->language);
            size_t wl = strlen(w);
            lang = xstrndup(w + 2, wl - 4);
            free(w);
        }
        sb_t b = {0};
        char line[160];
        snprintf(line, sizeof line, " %s %s %zu samples sum %.4f peak %.4f", c->task ? c->task : "transcribe",
                 lang ? lang : "auto", n, sum, peak);
        sb_puts(&b, line);
        if (c->initial_prompt) { sb_puts(&b, " prompt "); sb_puts(&b, c->initial_prompt); }
        if (c->hotwords) { sb_puts(&b, " hotwords "); sb_puts(&b, c->hotwords); }
        free(lang);
        reply = sb_take(&b);
    }
    free(r->text); r->text = reply; r->n_texts = 1; r->score = 1.0f;
    if (c->return_timestamps) {
        size_t windows = (n + WHISPER_WINDOW - 1) / WHISPER_WINDOW;
        r->has_chunks = 1; r->n_chunks = windows;
        r->starts = xmalloc(windows * sizeof *r->starts); r->ends = xmalloc(windows * sizeof *r->ends);
        r->chunk_texts = xmalloc(windows * sizeof *r->chunk_texts);
        for (size_t i = 0; i < windows; i++) {
            size_t lo = i * WHISPER_WINDOW, hi = lo + WHISPER_WINDOW < n ? lo + WHISPER_WINDOW : n;
            char line[96];
            snprintf(line, sizeof line, " window %zu %zu samples", i, hi - lo);
            r->starts[i] = (float)lo / WHISPER_RATE; r->ends[i] = (float)hi / WHISPER_RATE;
            r->chunk_texts[i] = xstrdup(line);
        }
    }
    perf_fill(&r->p, load_time, 0, count_words(r->text));
    return r;
}
EXPORT ov_status_e ov_genai_whisper_pipeline_generate(ov_genai_whisper_pipeline* pipeline, const float* raw_speech, size_t raw_speech_size, const ov_genai_whisper_generation_config* config, ov_genai_whisper_decoded_results** results) {
    if (!WPIPE_OK(pipeline) || !raw_speech || !results || (config && !WCFG_OK(config))) {
        set_last_gen(INVALID_C_PARAM); return INVALID_C_PARAM;
    }
    wpipe_enter(pipeline);
    tlog("whisper_generate", pipeline->serial);
    ov_status_e ret = OK;
    int st = injected(__func__);
    if (st) ret = (ov_status_e)st;
    else if (raw_speech_size == 0) ret = UNKNOW_EXCEPTION;
    else {
        wcfg_t c;
        wcfg_copy(&c, config ? &config->c : &pipeline->cfg);
        if (c.eos_token_id == -1) c.eos_token_id = pipeline->cfg.eos_token_id;
        if (!wcfg_valid(&c)) ret = UNKNOW_EXCEPTION;
        else *results = whisper_transcribe(raw_speech, raw_speech_size, &c, pipeline->load_time);
        wcfg_clear(&c);
    }
    wpipe_leave(pipeline);
    set_last_gen(ret);
    return ret;
}
EXPORT ov_status_e ov_genai_whisper_pipeline_get_generation_config(const ov_genai_whisper_pipeline* pipeline, ov_genai_whisper_generation_config** config) {
    if (!WPIPE_OK(pipeline) || !config) return INVALID_C_PARAM;
    ov_genai_whisper_pipeline* p = (ov_genai_whisper_pipeline*)pipeline;
    wpipe_enter(p);
    tlog("whisper_get_config", p->serial);
    int st = injected(__func__);
    if (!st) { wcfg_t c; wcfg_copy(&c, &p->cfg); *config = wcfg_handle(&c); }
    wpipe_leave(p);
    return st ? (ov_status_e)st : OK;
}
EXPORT ov_status_e ov_genai_whisper_pipeline_set_generation_config(ov_genai_whisper_pipeline* pipeline, ov_genai_whisper_generation_config* config) {
    if (!WPIPE_OK(pipeline) || !WCFG_OK(config)) return INVALID_C_PARAM;
    wpipe_enter(pipeline);
    tlog("whisper_set_config", pipeline->serial);
    int st = injected(__func__);
    ov_status_e ret = OK;
    if (st) ret = (ov_status_e)st;
    else {
        wcfg_t c;
        wcfg_copy(&c, &config->c);
        if (c.eos_token_id == -1) c.eos_token_id = pipeline->cfg.eos_token_id;
        if (!wcfg_valid(&c)) { wcfg_clear(&c); ret = UNKNOW_EXCEPTION; }
        else { wcfg_clear(&pipeline->cfg); pipeline->cfg = c; }
    }
    wpipe_leave(pipeline);
    return ret;
}

/* ------------------------------------------------------------------ controls */
EXPORT void ovd_reset(void) {
    pthread_mutex_lock(&g_mu);
    g_nfaults = 0; atomic_store(&g_have_faults, 0);
    free(g_reply); g_reply = NULL;
    g_chunk_bytes = 0; g_delay_us = 0;
    pthread_mutex_unlock(&g_mu);
}
EXPORT void ovd_fail(const char* function_name, int status, int after_calls) {
    if (!function_name) return;
    pthread_mutex_lock(&g_mu);
    int i;
    for (i = 0; i < g_nfaults; i++) if (strcmp(g_faults[i].name, function_name) == 0) break;
    if (i < MAX_FAULTS) {
        snprintf(g_faults[i].name, sizeof g_faults[i].name, "%s", function_name);
        g_faults[i].status = status;
        g_faults[i].remaining = after_calls < 0 ? 0 : after_calls;
        if (i == g_nfaults) g_nfaults++;
        atomic_store(&g_have_faults, 1);
    }
    pthread_mutex_unlock(&g_mu);
}
EXPORT void ovd_set_reply(const char* text) {
    pthread_mutex_lock(&g_mu);
    free(g_reply); g_reply = text ? xstrdup(text) : NULL;
    pthread_mutex_unlock(&g_mu);
}
EXPORT void ovd_set_chunk_bytes(size_t n) { pthread_mutex_lock(&g_mu); g_chunk_bytes = n; pthread_mutex_unlock(&g_mu); }
EXPORT void ovd_set_token_delay_us(unsigned int us) { pthread_mutex_lock(&g_mu); g_delay_us = us; pthread_mutex_unlock(&g_mu); }
EXPORT long ovd_live(const char* kind) {
    long total = 0;
    for (int k = 0; k < K_COUNT; k++) {
        long v = atomic_load(&g_live[k]);
        if (kind && strcmp(kind, k_names[k]) == 0) return v;
        total += v;
    }
    return kind ? -1 : total;
}
static size_t copy_out(const char* s, char* buf, size_t buf_size) {
    size_t need = strlen(s) + 1;
    if (buf && buf_size >= need) memcpy(buf, s, need);
    return need;
}
EXPORT size_t ovd_thread_log(char* buf, size_t buf_size) {
    pthread_mutex_lock(&g_mu);
    size_t r = copy_out(g_tlog ? g_tlog : "", buf, buf_size);
    pthread_mutex_unlock(&g_mu);
    return r;
}
EXPORT void ovd_clear_thread_log(void) {
    pthread_mutex_lock(&g_mu);
    g_tlog_len = 0; if (g_tlog) g_tlog[0] = 0;
    pthread_mutex_unlock(&g_mu);
}
EXPORT int ovd_last_callback_status(void) { pthread_mutex_lock(&g_mu); int r = g_last_cb_status; pthread_mutex_unlock(&g_mu); return r; }
EXPORT long ovd_callback_count(void) { pthread_mutex_lock(&g_mu); long r = g_cb_count; pthread_mutex_unlock(&g_mu); return r; }
EXPORT long ovd_concurrent_violations(void) { pthread_mutex_lock(&g_mu); long r = g_violations; pthread_mutex_unlock(&g_mu); return r; }
EXPORT long ovd_chat_size(const void* pipe) {
    const ov_genai_llm_pipeline* p = pipe;
    if (!(PIPE_OK(p) || VPIPE_OK(p)) || !p->chat_on || !p->chat) return -1;
    return (long)p->chat->n;
}
EXPORT size_t ovd_last_properties(char* buf, size_t n) {
    pthread_mutex_lock(&g_mu);
    size_t r = copy_out(g_last_props ? g_last_props : "", buf, n);
    pthread_mutex_unlock(&g_mu);
    return r;
}
EXPORT int ovd_last_generate_status(void) { pthread_mutex_lock(&g_mu); int r = g_last_gen_status; pthread_mutex_unlock(&g_mu); return r; }
