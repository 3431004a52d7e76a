// Test harness for native/src/json and native/src/chat_template.
//
//   render_main TEMPLATE_FILE CONTEXT_JSON_FILE      render; output on stdout, or "ERROR: ..." on stderr + exit 2
//   render_main --json-roundtrip FILE [--indent N] [--sort-keys] [--ensure-ascii] [--item-sep S] [--key-sep S]
//                                                     parse FILE as JSON and dump it (errors: exit 2)
//   render_main --batch FILE                          FILE: [{"template": str, "context": obj}, ...]
//                                                     prints a JSON array of {"ok": str} | {"error": str}
//   render_main --bench TEMPLATE_FILE CONTEXT_JSON_FILE N
//                                                     prints microseconds per render (mean over N)
#include <chrono>
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

int main(int argc, char** argv) {
    try {
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
