/*
 * p4_14_ops.p4 -- P4_14 primitive actions, compiled by p4c (--std p4-14).
 *
 * What it does
 *   Frames carry Ethernet, a `cmd` header (op, a, b) and up to two `tag`
 *   headers (a header stack). The table `ops` (exact on cmd.op) runs one
 *   primitive action per op and `fwd` (exact on ingress port) sends the frame
 *   on. Ops:
 *     1 add(a, a, b)          2 subtract(a, a, b)      3 bit_and / bit_or / bit_xor
 *     4 shift_left / shift_right by constants          5 modify_field with a mask
 *     6 add_header(extra), copy_header(extra2, extra)  7 remove_header(tag[0])
 *     8 push(tag, 1) then set tag[0]                   9 pop(tag, 1)
 *    10 modify_field_with_hash_based_offset (crc16 of a and b, base 100, size 1000)
 *    11 clone_ingress_pkt_to_egress(session 5, a field list with meta.mark)
 *    12 resubmit with a field list (the resubmitted packet has meta.mark 7)
 *    13 drop()
 *   Egress writes instance_type and meta.mark into cmd.b for clones and
 *   resubmitted packets (instance_type != 0).
 *
 * P4_14 features exercised
 *   - add, subtract, bit_and, bit_or, bit_xor, shift_left, shift_right,
 *     modify_field with a mask, add_header, copy_header, remove_header, push,
 *     pop, modify_field_with_hash_based_offset, clone_ingress_pkt_to_egress,
 *     resubmit, drop
 *   - field_list with metadata for clone and resubmit
 *   - standard_metadata.instance_type in egress
 */

header_type ethernet_t {
    fields {
        dstAddr   : 48;
        srcAddr   : 48;
        etherType : 16;
    }
}

header_type cmd_t {
    fields {
        op : 8;
        a  : 16;
        b  : 16;
    }
}

header_type tag_t {
    fields {
        value : 16;
        next  : 8;
    }
}

header_type extra_t {
    fields {
        x : 32;
    }
}

header_type meta_t {
    fields {
        mark : 8;
        hash : 16;
    }
}

header ethernet_t ethernet;
header cmd_t cmd;
header tag_t tag[2];
header extra_t extra;
header extra_t extra2;
metadata meta_t meta;

parser start {
    extract(ethernet);
    extract(cmd);
    return select(latest.op) {
        0x80 mask 0x80 : parse_tag;
        default : ingress;
    }
}

parser parse_tag {
    extract(tag[next]);
    return select(latest.next) {
        1 : parse_tag;
        default : ingress;
    }
}

field_list hash_fields {
    cmd.a;
    cmd.b;
}

field_list_calculation ab_hash {
    input {
        hash_fields;
    }
    algorithm : crc16;
    output_width : 16;
}

field_list keep_mark {
    meta.mark;
}

action op_add() {
    add(cmd.a, cmd.a, cmd.b);
}

action op_sub() {
    subtract(cmd.a, cmd.a, cmd.b);
}

action op_bits() {
    bit_and(cmd.a, cmd.a, 0xFF0F);
    bit_or(cmd.a, cmd.a, 0x0100);
    bit_xor(cmd.b, cmd.b, cmd.a);
}

action op_shift() {
    shift_left(cmd.a, cmd.a, 3);
    shift_right(cmd.b, cmd.b, 5);
}

action op_mask() {
    modify_field(cmd.a, 0xABCD, 0x0FF0);
}

action op_add_header() {
    add_header(extra);
    modify_field(extra.x, 0xCAFEF00D);
    copy_header(extra2, extra);
    add_to_field(extra2.x, 1);
}

action op_remove() {
    remove_header(tag[0]);
}

action op_push() {
    push(tag, 1);
    modify_field(tag[0].value, 0xBEEF);
    modify_field(tag[0].next, 1);
}

action op_pop() {
    pop(tag, 1);
}

action op_hash() {
    modify_field_with_hash_based_offset(cmd.b, 100, ab_hash, 1000);
}

action op_clone() {
    modify_field(meta.mark, 9);
    clone_ingress_pkt_to_egress(5, keep_mark);
}

action op_resubmit() {
    modify_field(meta.mark, 7);
    resubmit(keep_mark);
}

action op_drop() {
    drop();
}

action nop() {
    no_op();
}

action set_port(port) {
    modify_field(standard_metadata.egress_spec, port);
}

action mark_copy() {
    modify_field(cmd.b, standard_metadata.instance_type);
    shift_left(cmd.b, cmd.b, 8);
    bit_or(cmd.b, cmd.b, meta.mark);
}

table ops {
    reads {
        cmd.op : exact;
    }
    actions {
        op_add; op_sub; op_bits; op_shift; op_mask; op_add_header; op_remove;
        op_push; op_pop; op_hash; op_clone; op_resubmit; op_drop; nop;
    }
    size : 64;
}

table fwd {
    reads {
        standard_metadata.ingress_port : exact;
    }
    actions {
        set_port;
    }
    size : 8;
}

table copies {
    actions {
        mark_copy;
    }
    size : 1;
}

control ingress {
    if (meta.mark == 0) {
        apply(ops);
    }
    apply(fwd);
}

control egress {
    if (standard_metadata.instance_type != 0) {
        apply(copies);
    }
}
