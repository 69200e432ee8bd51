/* ==========================================================================================
   src/status.c: Status                                                              >>status
   df_status carries TensorFlow's codes and a bounded message. Functions that fail write the
   first error and return its code; messages name the node involved: "... {{node name}}".
   ========================================================================================== */
const char *df_code_name(df_code code) {
    static const char *names[] = {"OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT",
        "DEADLINE_EXCEEDED", "NOT_FOUND", "ALREADY_EXISTS", "PERMISSION_DENIED",
        "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED", "OUT_OF_RANGE",
        "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};
    return (unsigned)code < sizeof names / sizeof *names ? names[code] : "UNKNOWN_CODE";
}

df_code df_status_set(df_status *st, df_code code, const char *fmt, ...) {
    if (!st) return code;
    st->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(st->message, sizeof st->message, fmt, ap);
    va_end(ap);
    return code;
}

void df_status_clear(df_status *st) {
    if (!st) return;
    st->code = DF_OK;
    st->message[0] = 0;
}
