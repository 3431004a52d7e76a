/* openvino/c/ov_shape.h */
typedef struct {
    int64_t rank;
    int64_t* dims;
} ov_shape_t;
ov_status_e ov_shape_create(const int64_t rank, const int64_t* dims, ov_shape_t* shape);
ov_status_e ov_shape_free(ov_shape_t* shape);
