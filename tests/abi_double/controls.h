/* Control functions of the ABI test double (tests/abi_double/abi_double.c); cffi-readable (no #include). */
void ovd_reset(void);
void ovd_fail(const char* function_name, int status, int after_calls);
void ovd_set_reply(const char* text);
void ovd_set_chunk_bytes(size_t n);
void ovd_set_token_delay_us(unsigned int us);
long ovd_live(const char* kind);
size_t ovd_thread_log(char* buf, size_t buf_size);
void ovd_clear_thread_log(void);
int ovd_last_callback_status(void);
long ovd_callback_count(void);
long ovd_concurrent_violations(void);
long ovd_chat_size(const void* pipe);
size_t ovd_last_properties(char* buf, size_t n);
int ovd_last_generate_status(void);
