// Test harness for native/src/json and native/src/chat_template.
//
//   render_main TEMPLATE_FILE CONTEXT_JSON_FILE      render; output on stdout, or "ERROR: ..." on stderr + exit 2
//   render_main --json-roundtrip FILE [--indent N] [--sort-keys] [--ensure-ascii] [--item-sep S] [--key-sep S]
//                                                     parse FILE as JSON and dump it (errors: exit 2)
//   render_main --batch FILE                          FILE: [{"template": str, "context": obj}, ...]
//                                                     prints a JSON array of {"ok": str} | {"error": str}
//   render_main --bench TEMPLATE_FILE CONTEXT_JSON_FILE N
//                                                     prints microseconds per render (mean over N)
//   render_main --selftest                            checks the C++ API of JsonValue / ChatTemplate; prints OK
#include <chrono>
#include <thread>
#include <vector>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "chat_template/chat_template.hpp"
#include "json/json.hpp"

using namespace ovgc;

static std::string slurp(const char* path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error(std::string("cannot open ") + path);
    std::ostringstream ss;
    ss << f.rdbuf();
    return ss.str();
}

static int g_failures = 0;
#define CHECK(cond)                                                            \
    do {                                                                       \
        if (!(cond)) {                                                         \
            std::cerr << "CHECK failed line " << __LINE__ << ": " #cond "\n"; \
            ++g_failures;                                                      \
        }                                                                      \
    } while (0)

template <class F>
static bool throws_json(F f) {
    try {
        f();
    } catch (const JsonError&) {
        return true;
    }
    return false;
}

static int selftest() {
    // construction and kinds
    CHECK(JsonValue().is_null());
    CHECK(JsonValue(nullptr).kind() == JsonValue::Kind::Null);
    CHECK(JsonValue(true).as_bool());
    CHECK(JsonValue(7).as_int() == 7);
    CHECK(JsonValue(int64_t(-5)).as_int() == -5);
    CHECK(JsonValue(uint64_t(42)).is_int());
    CHECK(JsonValue(uint64_t(18446744073709551615ull)).is_float());
    CHECK(JsonValue(2.5).as_number() == 2.5);
    CHECK(JsonValue(3).as_number() == 3.0);
    CHECK(JsonValue("x").as_string() == "x");
    CHECK(JsonValue(std::string("abc")).size() == 3);
    CHECK(JsonValue(1).is_number() && JsonValue(1.5).is_number() && !JsonValue(true).is_number());
    // wrong-kind access throws
    CHECK(throws_json([] { (void)JsonValue(1).as_string(); }));
    CHECK(throws_json([] { (void)JsonValue("1").as_int(); }));
    CHECK(throws_json([] { (void)JsonValue(1.5).as_int(); }));
    CHECK(throws_json([] { (void)JsonValue().as_array(); }));
    CHECK(throws_json([] { JsonValue a = JsonValue::array(); a.set("k", 1); }));
    CHECK(throws_json([] { JsonValue o = JsonValue::object(); o.push_back(1); }));
    // arrays
    JsonValue arr = JsonValue::array({1, "two"});
    arr.push_back(3.0);
    CHECK(arr.size() == 3);
    CHECK(arr.as_array()[1].as_string() == "two");
    // objects keep insertion order; set replaces in place; operator[] appends null
    JsonValue obj = JsonValue::object();
    obj.set("b", 1);
    obj.set("a", 2);
    obj.set("b", 3);
    CHECK(json_dump(obj) == "{\"b\":3,\"a\":2}");
    CHECK(obj["c"].is_null());
    CHECK(obj.size() == 3);
    CHECK(obj.as_object().back().first == "c");
    obj["c"] = "z";
    CHECK(obj.find("c") && obj.find("c")->as_string() == "z");
    CHECK(obj.find("nope") == nullptr);
    CHECK(obj.erase("a"));
    CHECK(!obj.erase("a"));
    CHECK(json_dump(obj) == "{\"b\":3,\"c\":\"z\"}");
    const JsonValue& cobj = obj;
    CHECK(cobj.find("b")->as_int() == 3);
    // equality: numbers by value, objects order-insensitive
    CHECK(JsonValue(1) == JsonValue(1.0));
    CHECK(JsonValue(1) != JsonValue(true));
    CHECK(json_parse("{\"a\":1,\"b\":[1,2]}") == json_parse("{\"b\":[1,2],\"a\":1}"));
    CHECK(json_parse("[1,2]") != json_parse("[2,1]"));
    // dump options
    JsonDumpOptions pretty;
    pretty.indent = 2;
    pretty.sort_keys = true;
    pretty.key_sep = ": ";
    CHECK(json_dump(json_parse("{\"b\":[1],\"a\":{}}"), pretty) == "{\n  \"a\": {},\n  \"b\": [\n    1\n  ]\n}");
    // parse error carries an offset
    try {
        json_parse("[1, 2, x]");
        CHECK(false);
    } catch (const JsonError& e) {
        CHECK(std::string(e.what()).find("offset 7") != std::string::npos);
    }
    // ChatTemplate: move, reuse, concurrent renders of one parsed template
    ChatTemplate t1("{% for m in messages %}[{{ m.role }}:{{ m.content }}]{% endfor %}");
    ChatTemplate t2 = std::move(t1);
    ChatTemplate t3("x");
    t3 = std::move(t2);
    JsonValue ctx = json_parse("{\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
    CHECK(t3.render(ctx) == "[user:hi]");
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int k = 0; k < 4; ++k)
        threads.emplace_back([&, k] {
            for (int r = 0; r < 200; ++r)
                if (t3.render(ctx) == "[user:hi]") ++ok[k];
        });
    for (auto& th : threads) th.join();
    for (int k = 0; k < 4; ++k) CHECK(ok[k] == 200);
    try {
        (void)t3.render(JsonValue(1));
        CHECK(false);
    } catch (const ChatTemplateError&) {
    }
    if (g_failures) return 1;
    std::cout << "OK";
    return 0;
}

int main(int argc, char** argv) {
    try {
        if (argc == 2 && std::string(argv[1]) == "--selftest") return selftest();
        if (argc >= 3 && std::string(argv[1]) == "--json-roundtrip") {
            JsonDumpOptions opt;
            for (int k = 3; k < argc; ++k) {
                std::string a = argv[k];
                if (a == "--indent" && k + 1 < argc) opt.indent = std::stoi(argv[++k]);
                else if (a == "--sort-keys") opt.sort_keys = true;
                else if (a == "--ensure-ascii") opt.ensure_ascii = true;
                else if (a == "--item-sep" && k + 1 < argc) opt.item_sep = argv[++k];
                else if (a == "--key-sep" && k + 1 < argc) opt.key_sep = argv[++k];
                else throw std::runtime_error("unknown option " + a);
            }
            try {
                JsonValue v = json_parse(slurp(argv[2]));
                std::cout << json_dump(v, opt);
            } catch (const JsonError& e) {
                std::cerr << "ERROR: " << e.what() << "\n";
                return 2;
            }
            return 0;
        }
        if (argc >= 3 && std::string(argv[1]) == "--batch") {
            JsonValue jobs = json_parse(slurp(argv[2]));
            JsonValue results = JsonValue::array();
            for (const auto& job : jobs.as_array()) {
                JsonValue r = JsonValue::object();
                try {
                    ChatTemplate t(job.find("template")->as_string());
                    r.set("ok", t.render(*job.find("context")));
                } catch (const ChatTemplateError& e) {
                    r.set("error", e.what());
                }
                results.push_back(std::move(r));
            }
            JsonDumpOptions opt;
            opt.ensure_ascii = true;
            std::cout << json_dump(results, opt);
            return 0;
        }
        if (argc >= 5 && std::string(argv[1]) == "--bench") {
            ChatTemplate t(slurp(argv[2]));
            JsonValue ctx = json_parse(slurp(argv[3]));
            int n = std::stoi(argv[4]);
            size_t total = 0;
            auto t0 = std::chrono::steady_clock::now();
            for (int k = 0; k < n; ++k) total += t.render(ctx).size();
            auto t1 = std::chrono::steady_clock::now();
            double us = std::chrono::duration<double, std::micro>(t1 - t0).count() / n;
            std::cout << us << "\n";
            return total ? 0 : 1;
        }
        if (argc == 3) {
            try {
                ChatTemplate t(slurp(argv[1]));
                JsonValue ctx = json_parse(slurp(argv[2]));
                std::cout << t.render(ctx);
            } catch (const ChatTemplateError& e) {
                std::cerr << "ERROR: " << e.what() << "\n";
                return 2;
            }
            return 0;
        }
        std::cerr << "usage: render_main TEMPLATE CONTEXT | --json-roundtrip FILE [opts] | --batch FILE | --bench T C N\n";
        return 64;
    } catch (const std::exception& e) {
        std::cerr << "ERROR: " << e.what() << "\n";
        return 3;
    }
}
