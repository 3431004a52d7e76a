/*
 * stress_main.c -- drives every area of the ABI double from C, on several threads, so that it can be run
 * under AddressSanitizer/UndefinedBehaviorSanitizer/LeakSanitizer (test_double.py compiles it with
 * -fsanitize=address,undefined when the compiler supports that).  Includes the double's source directly.
 * Exit status 0 and the line "stress ok" on success.
 */
#include "abi_double.c"

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "CHECK failed line %d: %s\n", __LINE__, #cond); exit(1); } } while (0)

static ov_genai_streaming_status_e count_cb(const char* s, void* args) {
    int* n = args;
    CHECK(s != NULL);
    (*n)++;
    return *n == 4 ? OV_GENAI_STREAMING_STATUS_CANCEL : OV_GENAI_STREAMING_STATUS_RUNNING;
}

static void json_and_history(void) {
    static const char* docs[] = {
        "{\"a\":[1,2.5,\"x\\u00e9\",{\"b\":null}],\"a\":true,\"n\":-0.0,\"big\":18446744073709551615}",
        "[1,", "[{\"role\":\"user\",\"content\":\"hello there you\"}]", "{\"x\":\"\\ud800\"}", "\"\\ud83d\\ude00\"",
        "[[[[[[[[[[[]]]]]]]]]]]", "1e999", "{\"k\":\"\\u0000\"}",
    };
    for (size_t i = 0; i < sizeof docs / sizeof *docs; i++) {
        ov_genai_json_container *t = NULL, *c = NULL;
        if (ov_genai_json_container_create_from_json_string(&t, docs[i]) != OV_GENAI_JSON_CONTAINER_OK) continue;
        size_t n = 0;
        CHECK(ov_genai_json_container_to_json_string(t, NULL, &n) == OV_GENAI_JSON_CONTAINER_OK);
        char* b = malloc(n);
        size_t small = n - 1;
        CHECK(ov_genai_json_container_to_json_string(t, b, &small) == OV_GENAI_JSON_CONTAINER_OUT_OF_BOUNDS);
        CHECK(ov_genai_json_container_to_json_string(t, b, &n) == OV_GENAI_JSON_CONTAINER_OK);
        free(b);
        CHECK(ov_genai_json_container_copy(t, &c) == OV_GENAI_JSON_CONTAINER_OK);
        ov_genai_json_container_free(c);
        ov_genai_json_container_free(t);
    }
    ov_genai_json_container *arr = NULL, *obj = NULL, *out = NULL;
    ov_genai_chat_history* h = NULL;
    CHECK(ov_genai_json_container_create_from_json_string(&arr, docs[2]) == 0);
    CHECK(ov_genai_json_container_create_from_json_string(&obj, "{\"role\":\"assistant\",\"content\":\"ok\"}") == 0);
    CHECK(ov_genai_chat_history_create_from_json_container(&h, obj) == OV_GENAI_CHAT_HISTORY_INVALID_JSON);
    CHECK(ov_genai_chat_history_create_from_json_container(&h, arr) == 0);
    CHECK(ov_genai_chat_history_push_back(h, obj) == 0);
    CHECK(ov_genai_chat_history_push_back(h, arr) == OV_GENAI_CHAT_HISTORY_INVALID_JSON);
    CHECK(ov_genai_chat_history_set_tools(h, arr) == 0);
    CHECK(ov_genai_chat_history_set_tools(h, arr) == 0);
    CHECK(ov_genai_chat_history_set_extra_context(h, obj) == 0);
    CHECK(ov_genai_chat_history_get_tools(h, &out) == 0); ov_genai_json_container_free(out);
    CHECK(ov_genai_chat_history_get_extra_context(h, &out) == 0); ov_genai_json_container_free(out);
    CHECK(ov_genai_chat_history_get_messages(h, &out) == 0); ov_genai_json_container_free(out);
    CHECK(ov_genai_chat_history_get_message(h, 1, &out) == 0); ov_genai_json_container_free(out);
    CHECK(ov_genai_chat_history_get_message(h, 2, &out) == OV_GENAI_CHAT_HISTORY_OUT_OF_BOUNDS);
    CHECK(ov_genai_chat_history_pop_back(h) == 0);
    CHECK(ov_genai_chat_history_clear(h) == 0);
    CHECK(ov_genai_chat_history_pop_back(h) == OV_GENAI_CHAT_HISTORY_EMPTY);
    ov_genai_chat_history_free(h);
    ov_genai_json_container_free(arr);
    ov_genai_json_container_free(obj);
}

static void* worker(void* arg) {
    const char* dir = arg;
    for (int round = 0; round < 20; round++) {
        json_and_history();
        ov_genai_llm_pipeline* p = NULL;
        CHECK(ov_genai_llm_pipeline_create(dir, "CPU", 4, &p, "CACHE_DIR", "/x", "NUM_STREAMS", "1") == OK);
        ov_genai_llm_pipeline* bad = NULL;
        CHECK(ov_genai_llm_pipeline_create(dir, "CPU", 2, &bad, "BAD", "1") == UNKNOW_EXCEPTION && bad == NULL);
        ov_genai_generation_config* cfg = NULL;
        CHECK(ov_genai_generation_config_create(&cfg) == OK);
        const char* ss[] = {"you", NULL, "zz"};
        int64_t ids[] = {5, 6, 7};
        CHECK(ov_genai_generation_config_set_stop_strings(cfg, ss, 3) == OK);
        CHECK(ov_genai_generation_config_set_stop_strings(cfg, ss, 3) == OK);
        CHECK(ov_genai_generation_config_set_stop_token_ids(cfg, ids, 3) == OK);
        CHECK(ov_genai_generation_config_set_eos_token_id(cfg, 7) == OK);
        CHECK(ov_genai_generation_config_set_max_new_tokens(cfg, 10) == OK);
        CHECK(ov_genai_generation_config_set_include_stop_str_in_output(cfg, round & 1) == OK);
        CHECK(ov_genai_generation_config_validate(cfg) == OK);
        if (round % 3 == 0) CHECK(ov_genai_llm_pipeline_start_chat(p) == OK);
        int n = 0;
        streamer_callback s = {count_cb, &n};
        ov_genai_decoded_results* res = NULL;
        CHECK(ov_genai_llm_pipeline_generate(p, "hello there you all", cfg, &s, &res) == OK);
        size_t len = 0;
        CHECK(ov_genai_decoded_results_get_string(res, NULL, &len) == OK);
        ov_genai_perf_metrics *m1 = NULL, *m2 = NULL;
        CHECK(ov_genai_decoded_results_get_perf_metrics(res, &m1) == OK);
        CHECK(ov_genai_decoded_results_get_perf_metrics(res, &m2) == OK);
        CHECK(ov_genai_perf_metrics_add_in_place(m1, m2) == OK);
        ov_genai_decoded_results_perf_metrics_free(m1);
        ov_genai_decoded_results_perf_metrics_free(m2);
        ov_genai_decoded_results_free(res);
        n = -100;
        CHECK(ov_genai_llm_pipeline_generate(p, "a b c d e f g", NULL, &s, &res) == OK);
        ov_genai_decoded_results_free(res);
        ov_genai_chat_history* h = NULL;
        CHECK(ov_genai_chat_history_create(&h) == 0);
        CHECK(ov_genai_llm_pipeline_generate_with_history(p, h, NULL, NULL, &res) == OK);
        ov_genai_decoded_results_free(res);
        ov_genai_chat_history_free(h);
        ov_genai_generation_config* g = NULL;
        CHECK(ov_genai_llm_pipeline_get_generation_config(p, &g) == OK);
        CHECK(ov_genai_llm_pipeline_set_generation_config(p, g) == OK);
        ov_genai_generation_config_free(g);
        if (round % 2) CHECK(ov_genai_llm_pipeline_finish_chat(p) == OK);
        ov_genai_llm_pipeline_free(p);
        ov_genai_generation_config_free(cfg);
    }
    return NULL;
}

int main(int argc, char** argv) {
    const char* dir = argc > 1 ? argv[1] : "/tmp";
    char path[4096];
    snprintf(path, sizeof path, "%s/double_generation_config.json", dir);
    /* generation_config.json parsing, good and bad */
    FILE* f = fopen(path, "w");
    CHECK(f);
    fputs("{\"eos_token_id\":[2,3],\"max_new_tokens\":5,\"stop_strings\":[\"a\"]}", f);
    fclose(f);
    ov_genai_generation_config* fc = NULL;
    CHECK(ov_genai_generation_config_create_from_json(path, &fc) == OK);
    ov_genai_generation_config_free(fc);
    ovd_set_chunk_bytes(3);
    ovd_set_reply("h\xc3\xa9llo w\xc3\xb6rld you too");
    pthread_t t[4];
    for (int i = 0; i < 4; i++) CHECK(pthread_create(&t[i], NULL, worker, (void*)dir) == 0);
    for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
    ovd_fail("generate_midstream", -17, 1);
    ov_genai_llm_pipeline* p = NULL;
    CHECK(ov_genai_llm_pipeline_create(dir, "AUTO:CPU", 0, &p) == OK);
    ov_genai_decoded_results* res = NULL;
    CHECK(ov_genai_llm_pipeline_generate(p, "x y z", NULL, NULL, &res) == UNKNOW_EXCEPTION);
    ov_genai_llm_pipeline_free(p);
    f = fopen(path, "w");
    CHECK(f);
    fputs("{\"eos_token_id\":\"x\"}", f);
    fclose(f);
    CHECK(ov_genai_generation_config_create_from_json(path, &fc) == UNKNOW_EXCEPTION);
    remove(path);
    ovd_reset();
    CHECK(ovd_live(NULL) == 0);
    char buf[64];
    CHECK(ovd_thread_log(buf, sizeof buf) > sizeof buf); /* lots of lines */
    printf("stress ok\n");
    return 0;
}
