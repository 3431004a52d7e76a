/* openvino/c/ov_common.h (subset; ov_status_e is declared in ../00_ov_common.h). */
typedef enum {
    DYNAMIC = 0,
    BOOLEAN,
    BF16,
    F16,
    F32,
    F64,
    I4,
    I8,
    I16,
    I32,
    I64,
    U1,
    U2,
    U3,
    U4,
    U6,
    U8,
    U16,
    U32,
    U64,
    NF4,
    F8E4M3,
    F8E5M3,
    STRING,
    F4E2M1,
    F8E8M0,
} ov_element_type_e;
const char* ov_get_error_info(ov_status_e status);
void ov_free(const char* content);
const char* ov_get_last_err_msg(void);
