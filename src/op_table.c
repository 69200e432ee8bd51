/* ==========================================================================================
   src/op_table.c: The op table                                                     >>optable
   Every op under TensorFlow's name and attrs, with its shape function, CPU kernel and flags;
   the GPU kernels are added by src/kernels/gpu.c. Spec strings: inputs and outputs "name:T",
   "name:float", "name:N*T", "name:Ref(T)"; attrs "name:kind{allowed}=default" or ">=min".
   ========================================================================================== */
#define DF__NUM "{float,double,int32,int64}"
#define DF__FLT "{float,double}"
#define DF__BIN(name, code) {name, "x:T,y:T", "z:T", "T:type" DF__NUM, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, code}
#define DF__CMP(name, code, types) {name, "x:T,y:T", "z:bool", "T:type" types, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, code}
#define DF__UN(name, code, types) {name, "x:T", "y:T", "T:type" types, df__sf_same, df__k_unary, DF__OP_EXPENSIVE, code}
#define DF__RED(name, code) {name, "input:T,reduction_indices:Tidx", "output:T", \
    "keep_dims:bool=false,T:type" DF__NUM ",Tidx:type{int32,int64}=int32", df__sf_reduce, df__k_reduce, DF__OP_EXPENSIVE, code}
#define DF__RAND(name, code) {name, "shape:T", "output:dtype", "seed:int=0,seed2:int=0,dtype:type" DF__FLT \
    ",T:type{int32,int64}", df__sf_random, df__k_random, DF__OP_STATEFUL | DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, code}

static const df__opspec df__op_table[] = {
    /* functions and functional control flow (>>func): lowered before a graph runs */
    {"_Arg", "", "output:T", "T:type,index:int=0,shape:shape=?", df__sf_arg, NULL, DF__OP_NO_GRADIENT, 0},
    {"PartitionedCall", "args:Tin", "output:Tout", "Tin:list(type),Tout:list(type),f:func,config:string='',"
     "executor_type:string=''", df__sf_call, df__k_call, DF__OP_FUNCTIONAL, 0},
    {"StatefulPartitionedCall", "args:Tin", "output:Tout", "Tin:list(type),Tout:list(type),f:func,config:string='',"
     "executor_type:string=''", df__sf_call, NULL, DF__OP_FUNCTIONAL | DF__OP_STATEFUL, 0},
    {"Assert", "condition:bool,data:T", "", "T:list(type),summarize:int=3", NULL, df__k_assert,
     DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"If", "cond:Tcond,input:Tin", "output:Tout", "Tcond:type,Tin:list(type),Tout:list(type),then_branch:func,"
     "else_branch:func", df__sf_if, NULL, DF__OP_FUNCTIONAL | DF__OP_STATEFUL, 0},
    {"StatelessIf", "cond:Tcond,input:Tin", "output:Tout", "Tcond:type,Tin:list(type),Tout:list(type),then_branch:func,"
     "else_branch:func", df__sf_if, NULL, DF__OP_FUNCTIONAL, 0},
    {"While", "input:T", "output:T", "T:list(type),cond:func,body:func,parallel_iterations:int=10",
     df__sf_while, NULL, DF__OP_FUNCTIONAL | DF__OP_STATEFUL, 0},
    {"StatelessWhile", "input:T", "output:T", "T:list(type),cond:func,body:func,parallel_iterations:int=10",
     df__sf_while, NULL, DF__OP_FUNCTIONAL, 0},
    {"Const", "", "output:dtype", "value:tensor,dtype:type", df__sf_const, df__k_const, DF__OP_NO_GRADIENT, 0},
    {"Placeholder", "", "output:dtype", "dtype:type,shape:shape=?", df__sf_placeholder, df__k_placeholder, DF__OP_NO_GRADIENT, 0},
    {"PlaceholderWithDefault", "input:dtype", "output:dtype", "dtype:type,shape:shape=?", df__sf_placeholder, df__k_identity, 0, 0},
    {"Identity", "input:T", "output:T", "T:type", df__sf_same, df__k_identity, 0, 0},
    {"IdentityN", "input:T", "output:T", "T:list(type)", df__sf_identity_n, df__k_identity, 0, 0},
    {"StopGradient", "input:T", "output:T", "T:type", df__sf_same, df__k_identity, DF__OP_NO_GRADIENT, 0},
    {"NoOp", "", "", "", NULL, df__k_noop, 0, 0},
    DF__BIN("AddV2", DF__B_ADD), DF__BIN("Add", DF__B_ADD), DF__BIN("Sub", DF__B_SUB), DF__BIN("Mul", DF__B_MUL),
    DF__BIN("RealDiv", DF__B_DIV), DF__BIN("Div", DF__B_DIV), DF__BIN("Maximum", DF__B_MAX),
    DF__BIN("Minimum", DF__B_MIN), DF__BIN("Pow", DF__B_POW), DF__BIN("FloorMod", DF__B_FLOORMOD),
    DF__BIN("FloorDiv", DF__B_FLOORDIV), DF__BIN("SquaredDifference", DF__B_SQDIFF),
    DF__CMP("Less", DF__B_LESS, DF__NUM), DF__CMP("LessEqual", DF__B_LESS_EQ, DF__NUM),
    DF__CMP("Greater", DF__B_GREATER, DF__NUM), DF__CMP("GreaterEqual", DF__B_GREATER_EQ, DF__NUM),
    {"Equal", "x:T,y:T", "z:bool", "T:type{float,double,int32,int64,bool},incompatible_shape_error:bool=true",
     df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_EQUAL},
    {"NotEqual", "x:T,y:T", "z:bool", "T:type{float,double,int32,int64,bool},incompatible_shape_error:bool=true",
     df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_NOT_EQUAL},
    {"LogicalAnd", "x:bool,y:bool", "z:bool", "", df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_AND},
    {"LogicalOr", "x:bool,y:bool", "z:bool", "", df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_OR},
    {"LogicalNot", "x:bool", "y:bool", "", df__sf_same, df__k_unary, DF__OP_EXPENSIVE, DF__U_NOT},
    DF__UN("Neg", DF__U_NEG, DF__NUM), DF__UN("Square", DF__U_SQUARE, DF__NUM), DF__UN("Abs", DF__U_ABS, DF__NUM),
    DF__UN("Sign", DF__U_SIGN, DF__NUM), DF__UN("Relu", DF__U_RELU, DF__NUM),
    DF__UN("Sqrt", DF__U_SQRT, DF__FLT), DF__UN("Rsqrt", DF__U_RSQRT, DF__FLT), DF__UN("Exp", DF__U_EXP, DF__FLT),
    DF__UN("Log", DF__U_LOG, DF__FLT), DF__UN("Tanh", DF__U_TANH, DF__FLT), DF__UN("Sigmoid", DF__U_SIGMOID, DF__FLT),
    DF__UN("Reciprocal", DF__U_RECIPROCAL, DF__FLT), DF__UN("Floor", DF__U_FLOOR, DF__FLT),
    {"Select", "condition:bool,t:T,e:T", "output:T", "T:type", df__sf_select, df__k_select, DF__OP_EXPENSIVE, 0},
    {"SelectV2", "condition:bool,t:T,e:T", "output:T", "T:type", df__sf_select, df__k_select, DF__OP_EXPENSIVE, 0},
    {"Cast", "x:SrcT", "y:DstT", "SrcT:type,DstT:type,Truncate:bool=false", df__sf_same, df__k_cast, DF__OP_EXPENSIVE, 0},
    {"MatMul", "a:T,b:T", "product:T", "transpose_a:bool=false,transpose_b:bool=false,T:type{float,double,int32}",
     df__sf_matmul, df__k_matmul, DF__OP_EXPENSIVE, 0},
    {"BatchMatMulV2", "x:T,y:T", "output:T", "T:type{float,double,int32},adj_x:bool=false,adj_y:bool=false",
     df__sf_bmm, df__k_bmm, DF__OP_EXPENSIVE, 0},
#define DF__CONV_ATTRS "T:type{float,double},strides:list(int),use_cudnn_on_gpu:bool=true,padding:string," \
    "explicit_paddings:list(int)=[],data_format:string=NHWC,dilations:list(int)=[]"
    {"Conv2D", "input:T,filter:T", "output:T", DF__CONV_ATTRS, df__sf_conv2d, df__k_conv2d, DF__OP_EXPENSIVE, 0},
    {"Conv2DBackpropInput", "input_sizes:int32,filter:T,out_backprop:T", "output:T", DF__CONV_ATTRS,
     df__sf_conv_bp_input, df__k_conv2d_bp_input, DF__OP_EXPENSIVE, 0},
    {"Conv2DBackpropFilter", "input:T,filter_sizes:int32,out_backprop:T", "output:T", DF__CONV_ATTRS,
     df__sf_conv_bp_filter, df__k_conv2d_bp_filter, DF__OP_EXPENSIVE, 0},
#undef DF__CONV_ATTRS
#define DF__POOL_ATTRS "T:type{float,double}=float,ksize:list(int),strides:list(int),padding:string,data_format:string=NHWC"
    {"MaxPool", "input:T", "output:T", DF__POOL_ATTRS, df__sf_pool, df__k_pool, DF__OP_EXPENSIVE, 1},
    {"AvgPool", "value:T", "output:T", DF__POOL_ATTRS, df__sf_pool, df__k_pool, DF__OP_EXPENSIVE, 0},
    {"MaxPoolGrad", "orig_input:T,orig_output:T,grad:T", "output:T", DF__POOL_ATTRS, df__sf_same, df__k_max_pool_grad, DF__OP_EXPENSIVE, 0},
    {"AvgPoolGrad", "orig_input_shape:int32,grad:T", "output:T", DF__POOL_ATTRS, df__sf_pool_grad_avg, df__k_avg_pool_grad, DF__OP_EXPENSIVE, 0},
#undef DF__POOL_ATTRS
    {"BiasAdd", "value:T,bias:T", "output:T", "T:type" DF__NUM ",data_format:string=NHWC", df__sf_bias_add, df__k_bias_add, DF__OP_EXPENSIVE, 0},
    {"BiasAddGrad", "out_backprop:T", "output:T", "T:type" DF__FLT ",data_format:string=NHWC", df__sf_bias_add_grad,
     df__k_bias_add_grad, DF__OP_EXPENSIVE, 0},
    DF__RED("Sum", DF__R_SUM), DF__RED("Mean", DF__R_MEAN), DF__RED("Max", DF__R_MAX), DF__RED("Min", DF__R_MIN),
    DF__RED("Prod", DF__R_PROD),
    {"ArgMax", "input:T,dimension:Tidx", "output:output_type", "T:type" DF__NUM ",Tidx:type{int32,int64}=int32,"
     "output_type:type{int32,int64}=int64", df__sf_argmax, df__k_argmax, DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, 0},
    {"ArgMin", "input:T,dimension:Tidx", "output:output_type", "T:type" DF__NUM ",Tidx:type{int32,int64}=int32,"
     "output_type:type{int32,int64}=int64", df__sf_argmax, df__k_argmax, DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, 1},
    {"Reshape", "tensor:T,shape:Tshape", "output:T", "T:type,Tshape:type{int32,int64}=int32", df__sf_reshape, df__k_reshape, 0, 0},
    {"Transpose", "x:T,perm:Tperm", "y:T", "T:type,Tperm:type{int32,int64}=int32", df__sf_transpose, df__k_transpose, DF__OP_EXPENSIVE, 0},
    {"ExpandDims", "input:T,dim:Tdim", "output:T", "T:type,Tdim:type{int32,int64}=int32", df__sf_expand_dims, df__k_expand_dims, 0, 0},
    {"Squeeze", "input:T", "output:T", "T:type,squeeze_dims:list(int)=[]", df__sf_squeeze, df__k_squeeze, 0, 0},
    {"Shape", "input:T", "output:out_type", "T:type,out_type:type{int32,int64}=int32", df__sf_shape_op, df__k_shape, DF__OP_NO_GRADIENT, 0},
    {"Size", "input:T", "output:out_type", "T:type,out_type:type{int32,int64}=int32", df__sf_scalar, df__k_size, DF__OP_NO_GRADIENT, 0},
    {"Rank", "input:T", "output:int32", "T:type", df__sf_scalar, df__k_rank, DF__OP_NO_GRADIENT, 0},
    {"Fill", "dims:index_type,value:T", "output:T", "T:type,index_type:type{int32,int64}=int32", df__sf_fill, df__k_fill, DF__OP_EXPENSIVE, 0},
    {"ZerosLike", "x:T", "y:T", "T:type", df__sf_same, df__k_zeros_like, DF__OP_NO_GRADIENT, 0},
    {"OnesLike", "x:T", "y:T", "T:type", df__sf_same, df__k_zeros_like, DF__OP_NO_GRADIENT, 1},
    {"Range", "start:Tidx,limit:Tidx,delta:Tidx", "output:Tidx", "Tidx:type" DF__NUM "=int32", df__sf_range, df__k_range, DF__OP_NO_GRADIENT, 0},
    {"ConcatV2", "values:N*T,axis:Tidx", "output:T", "N:int>=2,T:type,Tidx:type{int32,int64}=int32", df__sf_concat, df__k_concat, DF__OP_EXPENSIVE, 0},
    {"Pack", "values:N*T", "output:T", "N:int>=1,T:type,axis:int=0", df__sf_pack, df__k_pack, DF__OP_EXPENSIVE, 0},
    {"Unpack", "value:T", "output:num*T", "num:int>=0,T:type,axis:int=0", df__sf_unpack, df__k_unpack, DF__OP_EXPENSIVE, 0},
    {"Slice", "input:T,begin:Index,size:Index", "output:T", "T:type,Index:type{int32,int64}", df__sf_slice, df__k_slice, DF__OP_EXPENSIVE, 0},
    {"StridedSlice", "input:T,begin:Index,end:Index,strides:Index", "output:T", "T:type,Index:type{int32,int64},"
     "begin_mask:int=0,end_mask:int=0,ellipsis_mask:int=0,new_axis_mask:int=0,shrink_axis_mask:int=0",
     df__sf_strided_slice, df__k_strided_slice, DF__OP_EXPENSIVE, 0},
    {"Tile", "input:T,multiples:Tmultiples", "output:T", "T:type,Tmultiples:type{int32,int64}=int32", df__sf_tile, df__k_tile, DF__OP_EXPENSIVE, 0},
    {"GatherV2", "params:Tparams,indices:Tindices,axis:Taxis", "output:Tparams",
     "Tparams:type,Tindices:type{int32,int64},Taxis:type{int32,int64},batch_dims:int=0", df__sf_gather, df__k_gather, DF__OP_EXPENSIVE, 0},
    {"OneHot", "indices:TI,depth:int32,on_value:T,off_value:T", "output:T", "axis:int=-1,T:type,TI:type{int32,int64}=int64",
     df__sf_one_hot, df__k_one_hot, DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, 0},
    {"Softmax", "logits:T", "softmax:T", "T:type" DF__FLT, df__sf_softmax, df__k_softmax, DF__OP_EXPENSIVE, 0},
    {"LogSoftmax", "logits:T", "logsoftmax:T", "T:type" DF__FLT, df__sf_softmax, df__k_softmax, DF__OP_EXPENSIVE, 1},
    {"SoftmaxCrossEntropyWithLogits", "features:T,labels:T", "loss:T,backprop:T", "T:type" DF__FLT, df__sf_xent, df__k_xent, DF__OP_EXPENSIVE, 0},
    {"SparseSoftmaxCrossEntropyWithLogits", "features:T,labels:Tlabels", "loss:T,backprop:T",
     "T:type" DF__FLT ",Tlabels:type{int32,int64}=int64", df__sf_xent, df__k_xent, DF__OP_EXPENSIVE, 1},
    {"AddN", "inputs:N*T", "sum:T", "N:int>=1,T:type{float,double,int32,int64,variant}", df__sf_add_n, df__k_add_n, DF__OP_EXPENSIVE, 0},
    {"VariableV2", "", "ref:Ref(dtype)", "shape:shape,dtype:type,container:string=,shared_name:string=",
     df__sf_variable, df__k_variable, DF__OP_STATEFUL, 0},
    {"SaveV2", "prefix:string,tensor_names:string,shape_and_slices:string,tensors:dtypes", "", "dtypes:list(type)",
     NULL, df__k_save_v2, DF__OP_STATEFUL | DF__OP_NO_GRADIENT | DF__OP_EXPENSIVE, 0},
    {"RestoreV2", "prefix:string,tensor_names:string,shape_and_slices:string", "tensors:dtypes", "dtypes:list(type)",
     df__sf_unknown, df__k_restore_v2, DF__OP_STATEFUL | DF__OP_NO_GRADIENT | DF__OP_EXPENSIVE, 0},
    {"Assign", "ref:Ref(T),value:T", "output_ref:Ref(T)", "T:type,validate_shape:bool=true,use_locking:bool=true",
     df__sf_assign, df__k_assign, DF__OP_STATEFUL | DF__OP_ALLOWS_UNINIT, 0},
    {"AssignAdd", "ref:Ref(T),value:T", "output_ref:Ref(T)", "T:type" DF__NUM ",use_locking:bool=false",
     df__sf_assign, df__k_assign, DF__OP_STATEFUL, 1},
    {"AssignSub", "ref:Ref(T),value:T", "output_ref:Ref(T)", "T:type" DF__NUM ",use_locking:bool=false",
     df__sf_assign, df__k_assign, DF__OP_STATEFUL, 2},
    DF__RAND("RandomUniform", 0), DF__RAND("RandomStandardNormal", 1), DF__RAND("TruncatedNormal", 2),
    {"Switch", "data:T,pred:bool", "output_false:T,output_true:T", "T:type", df__sf_switch, df__k_switch, DF__OP_SWITCH, 0},
    {"Merge", "inputs:N*T", "output:T,value_index:int32", "T:type,N:int>=1", df__sf_merge, df__k_merge, DF__OP_MERGE, 0},
    {"Enter", "data:T", "output:T", "T:type,frame_name:string,is_constant:bool=false,parallel_iterations:int=10",
     df__sf_enter, df__k_identity, DF__OP_ENTER, 0},
    {"Exit", "data:T", "output:T", "T:type", df__sf_same, df__k_identity, DF__OP_EXIT, 0},
    {"NextIteration", "data:T", "output:T", "T:type", df__sf_same, df__k_identity, DF__OP_NEXT_ITERATION, 0},
    {"LoopCond", "input:bool", "output:bool", "", df__sf_loop_cond, df__k_loop_cond, DF__OP_LOOP_COND, 0},
    {"ControlTrigger", "", "", "", NULL, df__k_noop, DF__OP_CONTROL_TRIGGER, 0},
    /* TF1's reference twins of the control-flow ops: they pass a variable's reference itself
       (read by its consumers when they run), so an Assign or Apply* in a loop body or a cond
       branch updates the variable; each behaves as its non-ref twin (same flags) */
    {"RefEnter", "data:Ref(T)", "output:Ref(T)", "T:type,frame_name:string,is_constant:bool=false,parallel_iterations:int=10",
     df__sf_enter, df__k_identity, DF__OP_ENTER, 0},
    {"RefSwitch", "data:Ref(T),pred:bool", "output_false:Ref(T),output_true:Ref(T)", "T:type", df__sf_switch, df__k_switch,
     DF__OP_SWITCH | DF__OP_ALLOWS_UNINIT, 0},
    {"RefMerge", "inputs:Ref(N*T)", "output:Ref(T),value_index:int32", "T:type,N:int>=1", df__sf_merge, df__k_merge, DF__OP_MERGE, 0},
    {"RefExit", "data:Ref(T)", "output:Ref(T)", "T:type", df__sf_same, df__k_identity, DF__OP_EXIT, 0},
    {"RefNextIteration", "data:Ref(T)", "output:Ref(T)", "T:type", df__sf_same, df__k_identity, DF__OP_NEXT_ITERATION, 0},
    {"RefIdentity", "input:Ref(T)", "output:Ref(T)", "T:type", df__sf_same, df__k_identity, DF__OP_ALLOWS_UNINIT, 0},
    {"ReluGrad", "gradients:T,features:T", "backprops:T", "T:type" DF__FLT, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_RELU_GRAD},
    {"TanhGrad", "y:T,dy:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_TANH_GRAD},
    {"SigmoidGrad", "y:T,dy:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_SIGMOID_GRAD},
    {"SqrtGrad", "y:T,dy:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_SQRT_GRAD},
    {"RsqrtGrad", "y:T,dy:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_RSQRT_GRAD},
    {"ReciprocalGrad", "y:T,dy:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_binary, DF__OP_EXPENSIVE, DF__B_RECIP_GRAD},
    {"BroadcastGradientArgs", "s0:T,s1:T", "r0:T,r1:T", "T:type{int32,int64}=int32", df__sf_bcast_grad_args, df__k_bcast_grad_args, DF__OP_NO_GRADIENT, 0},
    {"UnsortedSegmentSum", "data:T,segment_ids:Tindices,num_segments:Tnumsegments", "output:T",
     "T:type" DF__NUM ",Tindices:type{int32,int64},Tnumsegments:type{int32,int64}=int32", df__sf_segment_sum, df__k_segment_sum, DF__OP_EXPENSIVE, 0},
    {"Pad", "input:T,paddings:Tpaddings", "output:T", "T:type,Tpaddings:type{int32,int64}=int32", df__sf_pad, df__k_pad, DF__OP_EXPENSIVE, 0},
    {"InvertPermutation", "x:T", "y:T", "T:type{int32,int64}=int32", df__sf_same, df__k_invert_permutation, DF__OP_NO_GRADIENT, 0},
    {"BroadcastTo", "input:T,shape:Tidx", "output:T", "T:type,Tidx:type{int32,int64}=int32", df__sf_broadcast_to, df__k_broadcast_to, DF__OP_EXPENSIVE, 0},
    {"Cumprod", "x:T,axis:Tidx", "out:T", "exclusive:bool=false,reverse:bool=false,T:type" DF__FLT ",Tidx:type{int32,int64}=int32",
     df__sf_same, df__k_cumprod, DF__OP_EXPENSIVE, 0},
    /* src/kernels/extra.c */
    {"Split", "split_dim:int32,value:T", "output:num_split*T", "num_split:int>=1,T:type", df__sf_split, df__k_split, DF__OP_EXPENSIVE, 0},
    {"SplitV", "value:T,size_splits:Tlen,split_dim:int32", "output:num_split*T", "num_split:int>=1,T:type,Tlen:type{int32,int64}=int64",
     df__sf_split, df__k_split, DF__OP_EXPENSIVE, 0},
    {"DynamicStitch", "indices:N*int32,data:N*T", "merged:T", "N:int>=1,T:type", df__sf_dynamic_stitch, df__k_dynamic_stitch, DF__OP_EXPENSIVE, 0},
    {"ParallelDynamicStitch", "indices:N*int32,data:N*T", "merged:T", "N:int>=1,T:type", df__sf_dynamic_stitch, df__k_dynamic_stitch,
     DF__OP_EXPENSIVE, 0},
    {"Sin", "x:T", "y:T", "T:type" DF__FLT, df__sf_same, df__k_trig, DF__OP_EXPENSIVE, 0},
    {"Cos", "x:T", "y:T", "T:type" DF__FLT, df__sf_same, df__k_trig, DF__OP_EXPENSIVE, 1},
    /* src/kernels/math.c */
#define DF__MU(name, code, flags) {name, "x:T", "y:T", "T:type" DF__FLT, df__sf_same, df__k_math_unary, DF__OP_EXPENSIVE | (flags), code}
#define DF__MA(name, code, in, attrs) {name, in, "backprops:T", "T:type" DF__FLT attrs, df__sf_binary, df__k_math_binary, DF__OP_EXPENSIVE, code}
    {"IsFinite", "x:T", "y:bool", "T:type" DF__FLT, df__sf_same, df__k_math_unary, DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, DF__M_IS_FINITE},
    {"IsNan", "x:T", "y:bool", "T:type" DF__FLT, df__sf_same, df__k_math_unary, DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, DF__M_IS_NAN},
    {"IsInf", "x:T", "y:bool", "T:type" DF__FLT, df__sf_same, df__k_math_unary, DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, DF__M_IS_INF},
    {"All", "input:bool,reduction_indices:Tidx", "output:bool", "keep_dims:bool=false,Tidx:type{int32,int64}=int32",
     df__sf_reduce, df__k_all_any, DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, 0},
    {"Any", "input:bool,reduction_indices:Tidx", "output:bool", "keep_dims:bool=false,Tidx:type{int32,int64}=int32",
     df__sf_reduce, df__k_all_any, DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, 1},
    {"Softplus", "features:T", "activations:T", "T:type" DF__FLT, df__sf_same, df__k_math_unary, DF__OP_EXPENSIVE, DF__M_SOFTPLUS},
    {"Softsign", "features:T", "activations:T", "T:type" DF__FLT, df__sf_same, df__k_math_unary, DF__OP_EXPENSIVE, DF__M_SOFTSIGN},
    {"Elu", "features:T", "activations:T", "T:type" DF__FLT, df__sf_same, df__k_math_unary, DF__OP_EXPENSIVE, DF__M_ELU},
    {"Selu", "features:T", "activations:T", "T:type" DF__FLT, df__sf_same, df__k_math_unary, DF__OP_EXPENSIVE, DF__M_SELU},
    {"LeakyRelu", "features:T", "activations:T", "alpha:float=0.2,T:type" DF__FLT "=float", df__sf_same, df__k_math_unary,
     DF__OP_EXPENSIVE, DF__M_LEAKY_RELU},
    {"Relu6", "features:T", "activations:T", "T:type" DF__NUM, df__sf_same, df__k_math_unary, DF__OP_EXPENSIVE, DF__M_RELU6},
    DF__MA("SoftplusGrad", DF__M_SOFTPLUS_GRAD, "gradients:T,features:T", ""),
    DF__MA("SoftsignGrad", DF__M_SOFTSIGN_GRAD, "gradients:T,features:T", ""),
    DF__MA("EluGrad", DF__M_ELU_GRAD, "gradients:T,outputs:T", ""),
    DF__MA("SeluGrad", DF__M_SELU_GRAD, "gradients:T,outputs:T", ""),
    DF__MA("LeakyReluGrad", DF__M_LEAKY_RELU_GRAD, "gradients:T,features:T", "=float,alpha:float=0.2"),
    {"Relu6Grad", "gradients:T,features:T", "backprops:T", "T:type" DF__NUM, df__sf_binary, df__k_math_binary, DF__OP_EXPENSIVE, DF__M_RELU6_GRAD},
    DF__MU("Log1p", DF__M_LOG1P, 0), DF__MU("Expm1", DF__M_EXPM1, 0), DF__MU("Erf", DF__M_ERF, 0), DF__MU("Erfc", DF__M_ERFC, 0),
    DF__MU("Tan", DF__M_TAN, 0), DF__MU("Asin", DF__M_ASIN, 0), DF__MU("Acos", DF__M_ACOS, 0), DF__MU("Atan", DF__M_ATAN, 0),
    DF__MU("Sinh", DF__M_SINH, 0), DF__MU("Cosh", DF__M_COSH, 0),
    {"Round", "x:T", "y:T", "T:type" DF__NUM, df__sf_same, df__k_math_unary, DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, DF__M_ROUND},
    DF__MU("Rint", DF__M_RINT, DF__OP_NO_GRADIENT), DF__MU("Ceil", DF__M_CEIL, DF__OP_NO_GRADIENT),
    {"Atan2", "y:T,x:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_math_binary, DF__OP_EXPENSIVE, DF__M_ATAN2},
    {"TruncateDiv", "x:T,y:T", "z:T", "T:type" DF__NUM, df__sf_binary, df__k_math_binary, DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, DF__M_TRUNCATE_DIV},
    /* TruncateMod: no gradient in TensorFlow (asking for one is an error there, as here) */
    {"TruncateMod", "x:T,y:T", "z:T", "T:type" DF__NUM, df__sf_binary, df__k_math_binary, DF__OP_EXPENSIVE, DF__M_TRUNCATE_MOD},
    {"L2Loss", "t:T", "output:T", "T:type" DF__FLT, df__sf_scalar, df__k_l2loss, DF__OP_EXPENSIVE, 0},
#undef DF__MU
#undef DF__MA
    {"ConcatOffset", "concat_dim:int32,shape:N*int32", "offset:N*int32", "N:int>=2", df__sf_concat_offset, df__k_concat_offset, DF__OP_NO_GRADIENT, 0},
    {"StridedSliceGrad", "shape:Index,begin:Index,end:Index,strides:Index,dy:T", "output:T", "T:type,Index:type{int32,int64},"
     "begin_mask:int=0,end_mask:int=0,ellipsis_mask:int=0,new_axis_mask:int=0,shrink_axis_mask:int=0",
     df__sf_shape_input, df__k_strided_slice_grad, DF__OP_EXPENSIVE, 0},
    {"StackV2", "max_size:int32", "handle:resource", "elem_type:type,stack_name:string=", df__sf_scalar, df__k_stack, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"StackPushV2", "handle:resource,elem:T", "output:T", "T:type,swap_memory:bool=false", df__sf_push, df__k_stack_push, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"StackPopV2", "handle:resource", "elem:elem_type", "elem_type:type", df__sf_unknown, df__k_stack_pop, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"LoopStackPush", "handle:resource,elem:T", "output:T", "T:type,swap_memory:bool=false", df__sf_push, df__k_loop_push, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"LoopStackPop", "handle:resource,count:int32", "elem:elem_type", "elem_type:type", df__sf_unknown, df__k_loop_pop, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"LoopStackPushN", "handle:resource,elems:T", "", "T:list(type),swap_memory:bool=false", NULL, df__k_loop_push_n, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"LoopStackPopN", "handle:resource,count:int32", "elems:T", "T:list(type)", df__sf_unknown, df__k_loop_pop_n, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"LoopIterationLess", "limit:int32", "output:bool", "", df__sf_scalar, df__k_loop_iteration_less, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"LoopCount", "pred:bool", "count:int32", "", df__sf_scalar, df__k_loop_count, DF__OP_EXIT | DF__OP_LOOP_COUNT | DF__OP_NO_GRADIENT, 0},
    {"StackCloseV2", "handle:resource", "", "", NULL, df__k_stack_close, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    /* TensorArrays (src/kernels/tensor_array.c) */
    {"TensorArrayV3", "size:int32", "handle:resource,flow:float", "dtype:type,element_shape:shape=?,dynamic_size:bool=false,"
     "clear_after_read:bool=true,identical_element_shapes:bool=false,tensor_array_name:string=", df__sf_ta, df__k_ta,
     DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"TensorArrayReadV3", "handle:resource,index:int32,flow_in:float", "value:dtype", "dtype:type", df__sf_ta_read, df__k_ta_read, DF__OP_STATEFUL, 0},
    {"TensorArrayWriteV3", "handle:resource,index:int32,value:T,flow_in:float", "flow_out:float", "T:type", df__sf_scalar, df__k_ta_write, DF__OP_STATEFUL, 0},
    {"TensorArrayGatherV3", "handle:resource,indices:int32,flow_in:float", "value:dtype", "dtype:type,element_shape:shape=?",
     df__sf_ta_gather, df__k_ta_gather, DF__OP_STATEFUL, 0},
    {"TensorArrayScatterV3", "handle:resource,indices:int32,value:T,flow_in:float", "flow_out:float", "T:type", df__sf_scalar, df__k_ta_scatter, DF__OP_STATEFUL, 0},
    {"TensorArrayConcatV3", "handle:resource,flow_in:float", "value:dtype,lengths:int64", "dtype:type,element_shape_except0:shape=?",
     df__sf_ta_concat, df__k_ta_concat, DF__OP_STATEFUL, 0},
    {"TensorArraySplitV3", "handle:resource,value:T,lengths:int64,flow_in:float", "flow_out:float", "T:type", df__sf_scalar, df__k_ta_split, DF__OP_STATEFUL, 0},
    {"TensorArraySizeV3", "handle:resource,flow_in:float", "size:int32", "", df__sf_scalar, df__k_ta_size, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"TensorArrayCloseV3", "handle:resource", "", "", NULL, df__k_ta_close, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"TensorArrayGradV3", "handle:resource,flow_in:float", "grad_handle:resource,flow_out:float", "source:string", df__sf_ta, df__k_ta_grad,
     DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"TensorArrayGradWithShape", "handle:resource,flow_in:float,shape_to_prepend:int32", "grad_handle:resource,flow_out:float", "source:string",
     df__sf_ta, df__k_ta_grad, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 1},
#define DF__XFER_ATTRS "tensor_name:string,send_device:string,send_device_incarnation:int,recv_device:string,client_terminated:bool=false"
    {"_Send", "tensor:T", "", "T:type," DF__XFER_ATTRS, NULL, df__k_send, DF__OP_STATEFUL | DF__OP_NO_GRADIENT | DF__OP_TRANSFER, 0},
    /* a GPU partition's nodes as one CUDA graph (cuda_graphs; made by the partitioner only) */
    {"_GpuGraph", "inputs:Tin", "outputs:Tout", "Tin:list(type),Tout:list(type)", NULL, NULL,
     DF__OP_STATEFUL | DF__OP_NO_GRADIENT | DF__OP_ALLOWS_UNINIT, 0},   /* (its nodes read variables themselves) */
    {"_Recv", "", "tensor:tensor_type", "tensor_type:type," DF__XFER_ATTRS, df__sf_unknown, df__k_recv,
     DF__OP_STATEFUL | DF__OP_NO_GRADIENT | DF__OP_TRANSFER | DF__OP_RECV, 0},
    {"_HostSend", "tensor:T", "", "T:type," DF__XFER_ATTRS, NULL, df__k_send, DF__OP_STATEFUL | DF__OP_NO_GRADIENT | DF__OP_TRANSFER, 0},
    {"_HostRecv", "", "tensor:tensor_type", "tensor_type:type," DF__XFER_ATTRS, df__sf_unknown, df__k_recv,
     DF__OP_STATEFUL | DF__OP_NO_GRADIENT | DF__OP_TRANSFER | DF__OP_RECV, 0},
#undef DF__XFER_ATTRS
    {"SumAccumulator", "", "handle:resource", "dtype:type" DF__FLT, df__sf_scalar, df__k_accum, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"SumAccumulatorAdd", "handle:resource,value:T", "", "T:type" DF__FLT, NULL, df__k_accum_add, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"SumAccumulatorMulAdd", "handle:resource,x:T,y:T", "product:T", "T:type" DF__FLT, df__sf_accum_mul_add, df__k_accum_mul_add, DF__OP_STATEFUL, DF__B_MUL},
    {"SumAccumulatorRead", "handle:resource,default:T", "sum:T", "T:type" DF__FLT, df__sf_accum_read, df__k_accum_read, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"ApplyGradientDescent", "var:Ref(T),alpha:T,delta:T", "out:Ref(T)", "T:type" DF__FLT ",use_locking:bool=false",
     df__sf_apply, df__k_apply, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"ApplyMomentum", "var:Ref(T),accum:Ref(T),lr:T,grad:T,momentum:T", "out:Ref(T)", "T:type" DF__FLT ",use_locking:bool=false,use_nesterov:bool=false",
     df__sf_apply, df__k_apply, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 1},
    {"ApplyAdam", "var:Ref(T),m:Ref(T),v:Ref(T),beta1_power:T,beta2_power:T,lr:T,beta1:T,beta2:T,epsilon:T,grad:T", "out:Ref(T)",
     "T:type" DF__FLT ",use_locking:bool=false,use_nesterov:bool=false", df__sf_apply, df__k_apply, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 2},
    /* ---- queues (src/queue.c); timeout_ms is accepted and, as in TensorFlow, not supported ---- */
#define DF__QUEUE_OP (DF__OP_STATEFUL | DF__OP_NO_GRADIENT)
    {"FIFOQueueV2", "", "handle:resource", "component_types:list(type)>=1,shapes:list(shape)=[],capacity:int=-1,"
     "container:string=,shared_name:string=", df__sf_fifo_queue, df__k_fifo_queue, DF__QUEUE_OP, 0},
    {"QueueEnqueueV2", "handle:resource,components:Tcomponents", "", "Tcomponents:list(type)>=1,timeout_ms:int=-1",
     df__sf_queue_enqueue, df__k_queue_enqueue, DF__QUEUE_OP | DF__OP_ASYNC, 0},
    {"QueueEnqueueManyV2", "handle:resource,components:Tcomponents", "", "Tcomponents:list(type)>=1,timeout_ms:int=-1",
     df__sf_queue_enqueue, df__k_queue_enqueue, DF__QUEUE_OP | DF__OP_ASYNC, 1},
    {"QueueDequeueV2", "handle:resource", "components:component_types", "component_types:list(type)>=1,timeout_ms:int=-1",
     df__sf_queue_dequeue, df__k_queue_dequeue, DF__QUEUE_OP | DF__OP_ASYNC, 0},
    {"QueueDequeueManyV2", "handle:resource,n:int32", "components:component_types", "component_types:list(type)>=1,timeout_ms:int=-1",
     df__sf_queue_dequeue, df__k_queue_dequeue, DF__QUEUE_OP | DF__OP_ASYNC, 1},
    {"QueueCloseV2", "handle:resource", "", "cancel_pending_enqueues:bool=false", NULL, df__k_queue_close, DF__QUEUE_OP, 0},
    {"QueueSizeV2", "handle:resource", "size:int32", "", df__sf_scalar, df__k_queue_size, DF__QUEUE_OP, 0},
    {"QueueIsClosedV2", "handle:resource", "is_closed:bool", "", df__sf_scalar, df__k_queue_is_closed, DF__QUEUE_OP, 0},
    /* ---- gradient accumulators (src/kernels/accumulator.c); the handle is a resource scalar ---- */
#define DF__ACCUM_DEF "dtype:type{float,double},shape:shape=?,container:string=,shared_name:string=,reduction_type:string=MEAN"
    {"ConditionalAccumulator", "", "handle:resource", DF__ACCUM_DEF, df__sf_accumulator, df__k_accumulator, DF__QUEUE_OP, 0},
    {"ResourceConditionalAccumulator", "", "handle:resource", DF__ACCUM_DEF, df__sf_accumulator, df__k_accumulator, DF__QUEUE_OP, 0},
    {"AccumulatorApplyGradient", "handle:resource,local_step:int64,gradient:dtype", "", "dtype:type{float,double}",
     df__sf_accum_apply, df__k_accum_apply, DF__QUEUE_OP, 0},
    {"ResourceAccumulatorApplyGradient", "handle:resource,local_step:int64,gradient:dtype", "", "dtype:type{float,double}",
     df__sf_accum_apply, df__k_accum_apply, DF__QUEUE_OP, 0},
    {"AccumulatorTakeGradient", "handle:resource,num_required:int32", "average:dtype", "dtype:type{float,double}",
     df__sf_accum_take, df__k_accum_take, DF__QUEUE_OP | DF__OP_ASYNC, 0},
    {"ResourceAccumulatorTakeGradient", "handle:resource,num_required:int32", "average:dtype", "dtype:type{float,double}",
     df__sf_accum_take, df__k_accum_take, DF__QUEUE_OP | DF__OP_ASYNC, 0},
    {"AccumulatorNumAccumulated", "handle:resource", "num_accumulated:int32", "", df__sf_scalar, df__k_accum_num, DF__QUEUE_OP, 0},
    {"ResourceAccumulatorNumAccumulated", "handle:resource", "num_accumulated:int32", "", df__sf_scalar, df__k_accum_num, DF__QUEUE_OP, 0},
    {"AccumulatorSetGlobalStep", "handle:resource,new_global_step:int64", "", "", NULL, df__k_accum_set_step, DF__QUEUE_OP, 0},
    {"ResourceAccumulatorSetGlobalStep", "handle:resource,new_global_step:int64", "", "", NULL, df__k_accum_set_step, DF__QUEUE_OP, 0},
#undef DF__ACCUM_DEF
#undef DF__QUEUE_OP
    /* ---- TensorLists and Optionals (src/kernels/tensor_list.c): values in DF_VARIANT scalars ---- */
#define DF__ST "shape_type:type{int32,int64}"
    {"EmptyTensorList", "element_shape:shape_type,max_num_elements:int32", "handle:variant", "element_dtype:type," DF__ST,
     df__sf_tl_handle, df__k_empty_tensor_list, DF__OP_NO_GRADIENT, 0},
    {"TensorListReserve", "element_shape:shape_type,num_elements:int32", "handle:variant", "element_dtype:type," DF__ST,
     df__sf_tl_handle, df__k_tensor_list_reserve, DF__OP_NO_GRADIENT, 0},
    {"TensorListFromTensor", "tensor:element_dtype,element_shape:shape_type", "output_handle:variant", "element_dtype:type," DF__ST,
     df__sf_tl_handle, df__k_tensor_list_from_tensor, 0, 0},
    {"TensorListSplit", "tensor:element_dtype,element_shape:shape_type,lengths:int64", "output_handle:variant",
     "element_dtype:type," DF__ST, df__sf_tl_handle, df__k_tensor_list_split, 0, 0},
    {"TensorListStack", "input_handle:variant,element_shape:int32", "tensor:element_dtype", "element_dtype:type,num_elements:int=-1",
     df__sf_tl_stack, df__k_tensor_list_stack, 0, 0},
    {"TensorListGather", "input_handle:variant,indices:int32,element_shape:int32", "values:element_dtype", "element_dtype:type",
     df__sf_tl_gather, df__k_tensor_list_gather, 0, 0},
    {"TensorListGetItem", "input_handle:variant,index:int32,element_shape:Tshape", "item:element_dtype",
     "element_dtype:type,Tshape:type{int32,int64}=int32", df__sf_tl_get_item, df__k_tensor_list_get_item, 0, 0},
    {"TensorListSetItem", "input_handle:variant,index:int32,item:element_dtype", "output_handle:variant",
     "element_dtype:type,resize_if_index_out_of_bounds:bool=false", df__sf_tl_handle, df__k_tensor_list_set_item, 0, 0},
    {"TensorListPushBack", "input_handle:variant,tensor:element_dtype", "output_handle:variant", "element_dtype:type",
     df__sf_tl_handle, df__k_tensor_list_push_back, 0, 0},
    {"TensorListPopBack", "input_handle:variant,element_shape:int32", "output_handle:variant,tensor:element_dtype", "element_dtype:type",
     df__sf_tl_pop_back, df__k_tensor_list_pop_back, 0, 0},
    {"TensorListLength", "input_handle:variant", "length:int32", "", df__sf_scalar, df__k_tensor_list_length, DF__OP_NO_GRADIENT, 0},
    {"TensorListElementShape", "input_handle:variant", "element_shape:shape_type", DF__ST, df__sf_tl_element_shape,
     df__k_tensor_list_element_shape, DF__OP_NO_GRADIENT, 0},
    {"TensorListConcatV2", "input_handle:variant,element_shape:shape_type,leading_dims:int64", "tensor:element_dtype,lengths:int64",
     "element_dtype:type," DF__ST, df__sf_tl_concat, df__k_tensor_list_concat, 0, 0},
    {"TensorListScatterIntoExistingList", "input_handle:variant,tensor:element_dtype,indices:int32", "output_handle:variant",
     "element_dtype:type", df__sf_tl_handle, df__k_tensor_list_scatter_into, 0, 0},
    {"TensorListScatter", "tensor:element_dtype,indices:int32,element_shape:shape_type", "output_handle:variant",
     "element_dtype:type," DF__ST, df__sf_tl_handle, df__k_tensor_list_scatter, 0, 0},
    {"TensorListScatterV2", "tensor:element_dtype,indices:int32,element_shape:shape_type,num_elements:int32", "output_handle:variant",
     "element_dtype:type," DF__ST, df__sf_tl_handle, df__k_tensor_list_scatter, 0, 0},
    {"TensorListResize", "input_handle:variant,size:int32", "output_handle:variant", "", df__sf_tl_handle, df__k_tensor_list_resize, 0, 0},
    {"TensorListPushBackBatch", "input_handles:variant,tensor:element_dtype", "output_handles:variant", "element_dtype:type",
     df__sf_tl_batch, df__k_tensor_list_push_back_batch, DF__OP_NO_GRADIENT, 0},
    {"TensorListConcatLists", "input_a:variant,input_b:variant", "output:variant", "element_dtype:type", df__sf_same,
     df__k_tensor_list_concat_lists, DF__OP_NO_GRADIENT, 0},
    {"OptionalNone", "", "optional:variant", "", df__sf_tl_handle, df__k_optional_none, DF__OP_NO_GRADIENT, 0},
    {"OptionalFromValue", "components:Toutput_types", "optional:variant", "Toutput_types:list(type)>=1", df__sf_tl_handle,
     df__k_optional_from_value, 0, 0},
    {"OptionalHasValue", "optional:variant", "has_value:bool", "", df__sf_scalar, df__k_optional_has_value, DF__OP_NO_GRADIENT, 0},
    {"OptionalGetValue", "optional:variant", "components:output_types", "output_types:list(type)>=1,output_shapes:list(shape)>=1",
     df__sf_optional_get_value, df__k_optional_get_value, 0, 0},
    /* ---- index ops (src/kernels/index.c): begin ---- */
#define DF__IX "Tindices:type{int32,int64},bad_indices_policy:string="
    {"GatherNd", "params:Tparams,indices:Tindices", "output:Tparams", "Tparams:type," DF__IX, df__sf_gather_nd, df__k_gather_nd, DF__OP_EXPENSIVE, 0},
    {"ScatterNd", "indices:Tindices,updates:T,shape:Tindices", "output:T", "T:type" DF__NUM "," DF__IX, df__sf_scatter_nd, df__k_scatter_nd,
     DF__OP_EXPENSIVE, 0},
    {"TensorScatterUpdate", "tensor:T,indices:Tindices,updates:T", "output:T", "T:type," DF__IX, df__sf_same, df__k_tensor_scatter,
     DF__OP_EXPENSIVE, DF__SC_UPDATE},
    {"TensorScatterAdd", "tensor:T,indices:Tindices,updates:T", "output:T", "T:type" DF__NUM "," DF__IX, df__sf_same, df__k_tensor_scatter,
     DF__OP_EXPENSIVE, DF__SC_ADD},
    {"TensorScatterSub", "tensor:T,indices:Tindices,updates:T", "output:T", "T:type" DF__NUM "," DF__IX, df__sf_same, df__k_tensor_scatter,
     DF__OP_EXPENSIVE, DF__SC_SUB},
    {"TensorScatterMax", "tensor:T,indices:Tindices,updates:T", "output:T", "T:type" DF__NUM "," DF__IX, df__sf_same, df__k_tensor_scatter,
     DF__OP_EXPENSIVE, DF__SC_MAX},
    {"TensorScatterMin", "tensor:T,indices:Tindices,updates:T", "output:T", "T:type" DF__NUM "," DF__IX, df__sf_same, df__k_tensor_scatter,
     DF__OP_EXPENSIVE, DF__SC_MIN},
#undef DF__IX
    {"Where", "input:T", "index:int64", "T:type{float,double,int32,int64,bool,uint8,int8,int16,uint16,uint32,uint64,half,bfloat16}=bool",
     df__sf_where, df__k_where, DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, 0},
    /* Unique, ListDiff, Bincount, DenseBincount: no gradient in TensorFlow (asking for one is an error, as there) */
    {"Unique", "x:T", "y:T,idx:out_idx", "T:type,out_idx:type{int32,int64}=int32", df__sf_unique, df__k_unique, DF__OP_EXPENSIVE, 0},
    {"ListDiff", "x:T,y:T", "out:T,idx:out_idx", "T:type,out_idx:type{int32,int64}=int32", df__sf_list_diff, df__k_list_diff, DF__OP_EXPENSIVE, 0},
#define DF__SEG(name, code) {name, "data:T,segment_ids:Tindices", "output:T", "T:type" DF__NUM ",Tindices:type{int32,int64}", \
    df__sf_segment, df__k_segment, DF__OP_EXPENSIVE, code}
    DF__SEG("SegmentSum", DF__SEG_SUM), DF__SEG("SegmentMean", DF__SEG_MEAN), DF__SEG("SegmentMax", DF__SEG_MAX),
    DF__SEG("SegmentMin", DF__SEG_MIN), DF__SEG("SegmentProd", DF__SEG_PROD),
#undef DF__SEG
#define DF__USEG(name, code) {name, "data:T,segment_ids:Tindices,num_segments:Tnumsegments", "output:T", "T:type" DF__NUM \
    ",Tindices:type{int32,int64},Tnumsegments:type{int32,int64}=int32", df__sf_segment_sum, df__k_unsorted_segment, DF__OP_EXPENSIVE, code}
    DF__USEG("UnsortedSegmentMax", DF__SEG_MAX), DF__USEG("UnsortedSegmentMin", DF__SEG_MIN), DF__USEG("UnsortedSegmentProd", DF__SEG_PROD),
#undef DF__USEG
    {"ReverseV2", "tensor:T,axis:Tidx", "output:T", "Tidx:type{int32,int64}=int32,T:type", df__sf_same, df__k_reverse, DF__OP_EXPENSIVE, 0},
    {"Roll", "input:T,shift:Tshift,axis:Taxis", "output:T", "T:type,Tshift:type{int32,int64},Taxis:type{int32,int64}", df__sf_same, df__k_roll,
     DF__OP_EXPENSIVE, 0},
    {"ShapeN", "input:N*T", "output:N*out_type", "N:int>=1,T:type,out_type:type{int32,int64}=int32", df__sf_shape_n, df__k_shape_n,
     DF__OP_NO_GRADIENT, 0},
    {"InTopKV2", "predictions:float,targets:T,k:T", "precision:bool", "T:type{int32,int64}=int32", df__sf_in_top_k, df__k_in_top_k,
     DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, 0},
    {"Bincount", "arr:int32,size:int32,weights:T", "bins:T", "T:type" DF__NUM, df__sf_bincount, df__k_bincount, DF__OP_EXPENSIVE, 0},
    {"DenseBincount", "input:Tidx,size:Tidx,weights:T", "output:T", "Tidx:type{int32,int64},T:type" DF__NUM ",binary_output:bool=false",
     df__sf_bincount, df__k_bincount, DF__OP_EXPENSIVE, 1},
    /* ---- index ops: end ---- */

    /* ---- linalg ops (src/kernels/linalg.c): begin ---- */
    {"Einsum", "inputs:N*T", "output:T", "equation:string,N:int>=1,T:type", df__sf_einsum, df__k_einsum, DF__OP_EXPENSIVE, 0},
    {"TopKV2", "input:T,k:Tk", "values:T,indices:index_type", "sorted:bool=true,T:type" DF__NUM ",Tk:type{int32,int64}=int32,"
     "index_type:type{int32,int64}=int32", df__sf_topk, df__k_topk, DF__OP_EXPENSIVE, 0},
    {"Cumsum", "x:T,axis:Tidx", "out:T", "exclusive:bool=false,reverse:bool=false,T:type" DF__NUM ",Tidx:type{int32,int64}=int32",
     df__sf_same, df__k_cumsum, DF__OP_EXPENSIVE, 0},
    {"MatrixBandPart", "input:T,num_lower:Tindex,num_upper:Tindex", "band:T", "T:type,Tindex:type{int32,int64}=int64",
     df__sf_same, df__k_band_part, DF__OP_EXPENSIVE, 0},
    {"MatrixDiagPartV3", "input:T,k:int32,padding_value:T", "diagonal:T", "T:type,align:string=RIGHT_LEFT",
     df__sf_diag_part_v3, df__k_diag_part_v3, DF__OP_EXPENSIVE, 0},
    {"MatrixDiagV3", "diagonal:T,k:int32,num_rows:int32,num_cols:int32,padding_value:T", "output:T", "T:type,align:string=RIGHT_LEFT",
     df__sf_diag_v3, df__k_diag_v3, DF__OP_EXPENSIVE, 0},
    {"MatrixSetDiagV3", "input:T,diagonal:T,k:int32", "output:T", "T:type,align:string=RIGHT_LEFT",
     df__sf_same, df__k_set_diag_v3, DF__OP_EXPENSIVE, 0},
    {"EuclideanNorm", "input:T,reduction_indices:Tidx", "output:T", "keep_dims:bool=false,T:type" DF__FLT ",Tidx:type{int32,int64}=int32",
     df__sf_reduce, df__k_euclidean_norm, DF__OP_EXPENSIVE, 0},
    {"DivNoNan", "x:T,y:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_la_binary, DF__OP_EXPENSIVE, DF__LA_DIV_NO_NAN},
    {"Xdivy", "x:T,y:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_la_binary, DF__OP_EXPENSIVE, DF__LA_XDIVY},
    {"Xlogy", "x:T,y:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_la_binary, DF__OP_EXPENSIVE, DF__LA_XLOGY},
    {"Xlog1py", "x:T,y:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_la_binary, DF__OP_EXPENSIVE, DF__LA_XLOG1PY},
    {"Polygamma", "a:T,x:T", "z:T", "T:type" DF__FLT, df__sf_binary, df__k_la_binary, DF__OP_EXPENSIVE, DF__LA_POLYGAMMA},
    {"Lgamma", "x:T", "y:T", "T:type" DF__FLT, df__sf_same, df__k_la_unary, DF__OP_EXPENSIVE, DF__LA_LGAMMA},
    {"Digamma", "x:T", "y:T", "T:type" DF__FLT, df__sf_same, df__k_la_unary, DF__OP_EXPENSIVE, DF__LA_DIGAMMA},
    {"PadV2", "input:T,paddings:Tpaddings,constant_values:T", "output:T", "T:type,Tpaddings:type{int32,int64}=int32",
     df__sf_la_pad, df__k_pad_v2, DF__OP_EXPENSIVE, 0},
    {"MirrorPad", "input:T,paddings:Tpaddings", "output:T", "T:type,Tpaddings:type{int32,int64}=int32,mode:string",
     df__sf_la_pad, df__k_mirror_pad, DF__OP_EXPENSIVE, 0},
    {"MirrorPadGrad", "input:T,paddings:Tpaddings", "output:T", "T:type,Tpaddings:type{int32,int64}=int32,mode:string",
     df__sf_la_pad, df__k_mirror_pad, DF__OP_EXPENSIVE, 0},
    /* ---- linalg ops: end ---- */

    /* ---- nn_extra ops (src/kernels/nn_extra.c): begin ---- */
#define DF__BN_ATTRS "epsilon:float=0.0001,exponential_avg_factor:float=1,data_format:string=NHWC,is_training:bool=true"
#define DF__BN_GRAD_ATTRS "epsilon:float=0.0001,data_format:string=NHWC,is_training:bool=true"
    {"FusedBatchNorm", "x:T,scale:T,offset:T,mean:T,variance:T",
     "y:T,batch_mean:T,batch_variance:T,reserve_space_1:T,reserve_space_2:T", "T:type{float}," DF__BN_ATTRS,
     df__sf_fused_batch_norm, df__k_fused_batch_norm, DF__OP_EXPENSIVE, 0},
    {"FusedBatchNormV2", "x:T,scale:U,offset:U,mean:U,variance:U",
     "y:T,batch_mean:U,batch_variance:U,reserve_space_1:U,reserve_space_2:U",
     "T:type{half,bfloat16,float},U:type{float}," DF__BN_ATTRS, df__sf_fused_batch_norm, df__k_fused_batch_norm, DF__OP_EXPENSIVE, 0},
    {"FusedBatchNormV3", "x:T,scale:U,offset:U,mean:U,variance:U",
     "y:T,batch_mean:U,batch_variance:U,reserve_space_1:U,reserve_space_2:U,reserve_space_3:U",
     "T:type{half,bfloat16,float},U:type{bfloat16,float}," DF__BN_ATTRS, df__sf_fused_batch_norm, df__k_fused_batch_norm,
     DF__OP_EXPENSIVE, 0},
    {"FusedBatchNormGrad", "y_backprop:T,x:T,scale:T,reserve_space_1:T,reserve_space_2:T",
     "x_backprop:T,scale_backprop:T,offset_backprop:T,reserve_space_3:T,reserve_space_4:T", "T:type{float}," DF__BN_GRAD_ATTRS,
     df__sf_fused_batch_norm_grad, df__k_fused_batch_norm_grad, DF__OP_EXPENSIVE, 0},
    {"FusedBatchNormGradV2", "y_backprop:T,x:T,scale:float,reserve_space_1:U,reserve_space_2:U",
     "x_backprop:T,scale_backprop:U,offset_backprop:U,reserve_space_3:U,reserve_space_4:U",
     "T:type{half,bfloat16,float},U:type{float}," DF__BN_GRAD_ATTRS, df__sf_fused_batch_norm_grad, df__k_fused_batch_norm_grad,
     DF__OP_EXPENSIVE, 0},
    {"FusedBatchNormGradV3", "y_backprop:T,x:T,scale:float,reserve_space_1:U,reserve_space_2:U,reserve_space_3:U",
     "x_backprop:T,scale_backprop:U,offset_backprop:U,reserve_space_4:U,reserve_space_5:U",
     "T:type{half,bfloat16,float},U:type{float}," DF__BN_GRAD_ATTRS, df__sf_fused_batch_norm_grad, df__k_fused_batch_norm_grad,
     DF__OP_EXPENSIVE, 0},
#undef DF__BN_ATTRS
#undef DF__BN_GRAD_ATTRS
#define DF__DW_ATTRS "T:type{half,bfloat16,float,double},strides:list(int),padding:string,explicit_paddings:list(int)=[]," \
    "data_format:string=NHWC,dilations:list(int)=[]"
    {"DepthwiseConv2dNative", "input:T,filter:T", "output:T", DF__DW_ATTRS, df__sf_depthwise_conv2d, df__k_depthwise_conv2d,
     DF__OP_EXPENSIVE, 0},
    {"DepthwiseConv2dNativeBackpropInput", "input_sizes:int32,filter:T,out_backprop:T", "output:T", DF__DW_ATTRS,
     df__sf_depthwise_sizes, df__k_depthwise_conv2d_bp_input, DF__OP_EXPENSIVE, 0},
    {"DepthwiseConv2dNativeBackpropFilter", "input:T,filter_sizes:int32,out_backprop:T", "output:T", DF__DW_ATTRS,
     df__sf_depthwise_sizes, df__k_depthwise_conv2d_bp_filter, DF__OP_EXPENSIVE, 0},
#undef DF__DW_ATTRS
    /* ---- nn_extra ops: end ---- */

    /* ---- resource ops (src/kernels/resource.c): begin ---- */
    /* TF2's resource variables: the handle names a variable of the session's store */
    {"VarHandleOp", "", "resource:resource", "container:string=,shared_name:string=,debug_name:string=,dtype:type,shape:shape",
     df__sf_var_handle, df__k_var_handle, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"ReadVariableOp", "resource:resource", "value:dtype", "dtype:type", df__sf_read_variable, df__k_read_variable, DF__OP_STATEFUL, 0},
    {"AssignVariableOp", "resource:resource,value:dtype", "", "dtype:type,validate_shape:bool=false", df__sf_assign_variable,
     df__k_assign_variable, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"AssignAddVariableOp", "resource:resource,value:dtype", "", "dtype:type" DF__NUM, df__sf_assign_variable,
     df__k_assign_variable, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 1},
    {"AssignSubVariableOp", "resource:resource,value:dtype", "", "dtype:type" DF__NUM, df__sf_assign_variable,
     df__k_assign_variable, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 2},
    {"VarIsInitializedOp", "resource:resource", "is_initialized:bool", "", df__sf_scalar, df__k_var_is_initialized, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"VariableShape", "input:resource", "output:out_type", "out_type:type{int32,int64}=int32", df__sf_variable_shape,
     df__k_variable_shape, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"DestroyResourceOp", "resource:resource", "", "ignore_lookup_error:bool=true", NULL, df__k_destroy_resource, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"ResourceGather", "resource:resource,indices:Tindices", "output:dtype", "batch_dims:int=0,validate_indices:bool=true,"
     "dtype:type,Tindices:type{int32,int64}", df__sf_resource_gather, df__k_resource_gather, DF__OP_STATEFUL, 0},
    {"ResourceScatterAdd", "resource:resource,indices:Tindices,updates:dtype", "", "dtype:type" DF__NUM ",Tindices:type{int32,int64}",
     df__sf_resource_scatter, df__k_resource_scatter, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    {"ResourceScatterSub", "resource:resource,indices:Tindices,updates:dtype", "", "dtype:type" DF__NUM ",Tindices:type{int32,int64}",
     df__sf_resource_scatter, df__k_resource_scatter, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 1},
    {"ResourceScatterUpdate", "resource:resource,indices:Tindices,updates:dtype", "", "dtype:type{float,double,int32,int64,bool},"
     "Tindices:type{int32,int64}", df__sf_resource_scatter, df__k_resource_scatter, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 2},
#define DF__RAPPLY(name, ins, code) {name, ins, "", "T:type" DF__FLT ",use_locking:bool=false", df__sf_resource_apply, \
     df__k_resource_apply, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, code}
    DF__RAPPLY("ResourceApplyGradientDescent", "var:resource,alpha:T,delta:T", DF__RA_GD),
    {"ResourceApplyMomentum", "var:resource,accum:resource,lr:T,grad:T,momentum:T", "", "T:type" DF__FLT ",use_locking:bool=false,"
     "use_nesterov:bool=false", df__sf_resource_apply, df__k_resource_apply, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, DF__RA_MOMENTUM},
    {"ResourceApplyKerasMomentum", "var:resource,accum:resource,lr:T,grad:T,momentum:T", "", "T:type" DF__FLT ",use_locking:bool=false,"
     "use_nesterov:bool=false", df__sf_resource_apply, df__k_resource_apply, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, DF__RA_KERAS_MOMENTUM},
    {"ResourceApplyAdam", "var:resource,m:resource,v:resource,beta1_power:T,beta2_power:T,lr:T,beta1:T,beta2:T,epsilon:T,grad:T", "",
     "T:type" DF__FLT ",use_locking:bool=false,use_nesterov:bool=false", df__sf_resource_apply, df__k_resource_apply, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, DF__RA_ADAM},
    {"ResourceApplyAdagrad", "var:resource,accum:resource,lr:T,grad:T", "", "T:type" DF__FLT ",use_locking:bool=false,"
     "update_slots:bool=true", df__sf_resource_apply, df__k_resource_apply, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, DF__RA_ADAGRAD},
    {"ResourceApplyAdagradV2", "var:resource,accum:resource,lr:T,epsilon:T,grad:T", "", "T:type" DF__FLT ",use_locking:bool=false,"
     "update_slots:bool=true", df__sf_resource_apply, df__k_resource_apply, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, DF__RA_ADAGRAD_V2},
    DF__RAPPLY("ResourceApplyRMSProp", "var:resource,ms:resource,mom:resource,lr:T,rho:T,momentum:T,epsilon:T,grad:T", DF__RA_RMSPROP),
    DF__RAPPLY("ResourceApplyCenteredRMSProp", "var:resource,mg:resource,ms:resource,mom:resource,lr:T,rho:T,momentum:T,"
               "epsilon:T,grad:T", DF__RA_CENTERED_RMSPROP),
#undef DF__RAPPLY
    /* the ref twins TF1's optimizers emit for VariableV2 that src/kernels/training.c lacks */
    {"ApplyAdagrad", "var:Ref(T),accum:Ref(T),lr:T,grad:T", "out:Ref(T)", "T:type" DF__FLT ",use_locking:bool=false,"
     "update_slots:bool=true", df__sf_resource_apply, df__k_resource_apply, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, DF__RA_ADAGRAD},
    {"ApplyRMSProp", "var:Ref(T),ms:Ref(T),mom:Ref(T),lr:T,rho:T,momentum:T,epsilon:T,grad:T", "out:Ref(T)",
     "T:type" DF__FLT ",use_locking:bool=false", df__sf_resource_apply, df__k_resource_apply, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, DF__RA_RMSPROP},
    {"ApplyCenteredRMSProp", "var:Ref(T),mg:Ref(T),ms:Ref(T),mom:Ref(T),lr:T,rho:T,momentum:T,epsilon:T,grad:T", "out:Ref(T)",
     "T:type" DF__FLT ",use_locking:bool=false", df__sf_resource_apply, df__k_resource_apply, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, DF__RA_CENTERED_RMSPROP},
    /* ---- resource ops: end ---- */

    /* ---- half ops (src/kernels/half.c): begin ---- */
    /* ---- half ops: end ---- */

    /* ---- random2 ops (src/kernels/random.c): begin ---- */
#define DF__RND_F "{half,bfloat16,float,double}"
#define DF__RND_I "{int32,int64,uint32,uint64}"
#define DF__RND_FLAGS (DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT)
#define DF__SRV1(name, types, def, seeds) {name, "shape:T,seed:Tseed", "output:dtype", "dtype:type" types def \
    ",T:type{int32,int64}=int32,Tseed:type" seeds "=int64", df__sf_random, df__k_stateless_random, DF__RND_FLAGS, 0}
#define DF__SRV2(name, types, def, extra_in) {name, "shape:Tshape,key:uint64,counter:uint64,alg:int32" extra_in, "output:dtype", \
    "dtype:type" types def ",Tshape:type{int32,int64}=int32", df__sf_random, df__k_stateless_random_v2, DF__RND_FLAGS, 0}
    {"RandomUniformInt", "shape:T,minval:Tout,maxval:Tout", "output:Tout", "seed:int=0,seed2:int=0,Tout:type{int32,int64},"
     "T:type{int32,int64}", df__sf_random, df__k_random_uniform_int, DF__OP_STATEFUL | DF__RND_FLAGS, 0},
    {"RandomShuffle", "value:T", "output:T", "seed:int=0,seed2:int=0,T:type", df__sf_same, df__k_random_shuffle,
     DF__OP_STATEFUL | DF__RND_FLAGS, 0},
    {"Multinomial", "logits:T,num_samples:int32", "output:output_dtype", "seed:int=0,seed2:int=0,T:type" DF__RND_F
     ",output_dtype:type{int32,int64}=int64", df__sf_multinomial, df__k_multinomial, DF__OP_STATEFUL | DF__RND_FLAGS, 0},
    {"StatelessMultinomial", "logits:T,num_samples:int32,seed:Tseed", "output:output_dtype", "T:type" DF__RND_F
     ",Tseed:type{int32,int64}=int64,output_dtype:type{int32,int64}=int64", df__sf_multinomial, df__k_multinomial, DF__RND_FLAGS, 1},
    {"StatelessRandomGetKeyCounter", "seed:Tseed", "key:uint64,counter:uint64", "Tseed:type{int32,int64}=int64",
     df__sf_key_counter, df__k_stateless_get_key_counter, DF__OP_NO_GRADIENT, 0},
    {"StatelessRandomGetKeyCounterAlg", "seed:Tseed", "key:uint64,counter:uint64,alg:int32", "Tseed:type{int32,int64}=int64",
     df__sf_key_counter, df__k_stateless_get_key_counter, DF__OP_NO_GRADIENT, 1},
    {"StatelessRandomGetAlg", "", "alg:int32", "", df__sf_scalar, df__k_stateless_get_alg, DF__OP_STATEFUL | DF__OP_NO_GRADIENT, 0},
    DF__SRV1("StatelessRandomUniform", DF__RND_F, "=float", "{int32,int64}"),
    DF__SRV1("StatelessRandomNormal", DF__RND_F, "=float", "{int32,int64}"),
    DF__SRV1("StatelessTruncatedNormal", DF__RND_F, "=float", "{int32,int64}"),
    /* (unsigned seeds are allowed by the op and refused by the kernel, as in TensorFlow) */
    DF__SRV1("StatelessRandomUniformFullInt", DF__RND_I, "=uint64", DF__RND_I),
    {"StatelessRandomUniformInt", "shape:T,seed:Tseed,minval:dtype,maxval:dtype", "output:dtype", "dtype:type{int32,int64},"
     "T:type{int32,int64},Tseed:type{int32,int64}=int64", df__sf_random, df__k_stateless_random, DF__RND_FLAGS, 0},
    DF__SRV2("StatelessRandomUniformV2", DF__RND_F, "=float", ""), DF__SRV2("StatelessRandomNormalV2", DF__RND_F, "=float", ""),
    DF__SRV2("StatelessTruncatedNormalV2", DF__RND_F, "=float", ""),
    DF__SRV2("StatelessRandomUniformIntV2", DF__RND_I, "", ",minval:dtype,maxval:dtype"),
    DF__SRV2("StatelessRandomUniformFullIntV2", DF__RND_I, "=uint64", ""),
#undef DF__SRV1
#undef DF__SRV2
#undef DF__RND_F
#undef DF__RND_I
#undef DF__RND_FLAGS
    /* ---- random2 ops: end ---- */

    /* ---- resize ops (src/kernels/resize.c): begin ---- */
#define DF__RS_T "{int8,uint8,int16,uint16,int32,int64,bfloat16,half,float,double}"
#define DF__RS_A ",align_corners:bool=false,half_pixel_centers:bool=false"
    {"ResizeBilinear", "images:T,size:int32", "resized_images:float", "T:type" DF__RS_T DF__RS_A, df__sf_resize,
     df__k_resize_bilinear, DF__OP_EXPENSIVE, 0},
    {"ResizeBilinearGrad", "grads:float,original_image:T", "output:T", "T:type{float,bfloat16,half,double}" DF__RS_A,
     df__sf_resize_bilinear_grad, df__k_resize_bilinear_grad, DF__OP_EXPENSIVE | DF__OP_NO_GRADIENT, 0},
    {"ResizeNearestNeighbor", "images:T,size:int32", "resized_images:T", "T:type" DF__RS_T DF__RS_A, df__sf_resize,
     df__k_resize_nearest, DF__OP_EXPENSIVE, 0},
    /* ResizeNearestNeighborGrad: no gradient in TensorFlow (asking is an error, as there) */
    {"ResizeNearestNeighborGrad", "grads:T,size:int32", "output:T", "T:type{uint8,int8,int32,half,float,double,bfloat16}"
     DF__RS_A, df__sf_resize, df__k_resize_nearest_grad, DF__OP_EXPENSIVE, 0},
#undef DF__RS_T
#undef DF__RS_A
    /* ---- resize ops: end ---- */

    /* ---- summary ops (src/kernels/summary_ops.c): begin ---- */
#define DF__SUM_T "{float,double,int32,uint8,int16,int8,int64,bfloat16,uint16,half,uint32,uint64}"
    {"ScalarSummary", "tags:string,values:T", "summary:string", "T:type" DF__SUM_T, df__sf_scalar,
     df__k_scalar_summary, DF__OP_NO_GRADIENT, 0},
    {"HistogramSummary", "tag:string,values:T", "summary:string", "T:type" DF__SUM_T "=float", df__sf_scalar,
     df__k_histogram_summary, DF__OP_NO_GRADIENT, 0},
    {"MergeSummary", "inputs:N*string", "summary:string", "N:int>=1", df__sf_scalar, df__k_merge_summary,
     DF__OP_NO_GRADIENT, 0},
    {"TensorSummaryV2", "tag:string,tensor:T,serialized_summary_metadata:string", "summary:string", "T:type{float,"
     "double,int32,uint8,int16,int8,string,complex64,int64,bool,bfloat16,uint16,complex128,half,uint32,uint64}",
     df__sf_scalar, df__k_tensor_summary_v2, DF__OP_NO_GRADIENT, 0},
#undef DF__SUM_T
    /* ---- summary ops: end ---- */

#undef DF__ST
};
static const int df__op_table_size = (int)(sizeof df__op_table / sizeof *df__op_table);

const char *df_version(void) { return DF_VERSION_STRING; }
