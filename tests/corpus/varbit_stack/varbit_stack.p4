/*
 * varbit_stack.p4 -- a header stack of varbit headers, and varbit comparisons.
 *
 * What it does
 *   Frames of EtherType 0x88B5 carry up to three TLV options, each a fixed
 *   2-byte head (kind, len) and `len` bytes of value (0..16). The parser peeks
 *   at the head with lookahead and extracts the option into `hdr.opt.next`
 *   with that length; kind 0 ends the list. Ingress appends a `report` header
 *   that says how many options were parsed and how they compare:
 *     eq01 / ne01   hdr.opt[0].value == / != hdr.opt[1].value (varbit fields)
 *     heq02         hdr.opt[0] == hdr.opt[2] (whole headers with a varbit field)
 *                   (0xFF when an operand is invalid: bmv2 leaves stale values in
 *                   the fields of invalid headers, so such comparisons depend on
 *                   earlier packets)
 *     last_kind     hdr.opt.last.kind (read in the parser)
 *     parser_error  the error code (1 PacketTooShort, 3 StackOutOfBounds, 4 HeaderTooShort)
 *   and sends the frame to port 1 (port 2 when the parser reported an error).
 *
 * P4 / v1model features exercised
 *   - header stack whose element type has a varbit field
 *   - extract(stack.next, length) in a parser loop, length from lookahead
 *   - == and != between varbit fields, == between headers holding varbit
 *   - stack.last, stack.lastIndex, emit of a stack of varbit headers
 *   - StackOutOfBounds after three options, HeaderTooShort for len > 16
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header opt_t {
    bit<8>      kind;
    bit<8>      len;
    varbit<128> value;
}

header report_t {
    bit<8>  count;
    bit<8>  eq01;
    bit<8>  ne01;
    bit<8>  heq02;
    bit<8>  last_kind;
    bit<8>  last_index;
    bit<32> parser_error;
}

struct headers_t {
    ethernet_t ethernet;
    opt_t[3]   opt;
    report_t   report;
}

struct metadata_t {
    bit<8> count;
    bit<8> last_kind;
    bit<8> last_index;
}

parser ParserImpl(packet_in pkt,
                  out headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t std_meta) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x88B5: parse_opt;
            default: accept;
        }
    }
    state parse_opt {
        bit<16> head = pkt.lookahead<bit<16>>();
        transition select(head[15:8]) {
            0: accept;
            default: extract_opt;
        }
    }
    state extract_opt {
        bit<16> head = pkt.lookahead<bit<16>>();
        pkt.extract(hdr.opt.next, (bit<32>)head[7:0] << 3);
        meta.count = meta.count + 1;
        meta.last_kind = hdr.opt.last.kind;
        meta.last_index = (bit<8>)hdr.opt.lastIndex;
        transition parse_opt;
    }
}

control VerifyChecksumImpl(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control IngressImpl(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t std_meta) {
    apply {
        if (!hdr.ethernet.isValid()) {
            mark_to_drop(std_meta);
            return;
        }
        hdr.report.setValid();
        hdr.report.count = meta.count;
        // Fields of invalid headers hold whatever an earlier packet left in
        // bmv2 (stale values): compare only valid ones.
        if (hdr.opt[0].isValid() && hdr.opt[1].isValid()) {
            hdr.report.eq01 = (hdr.opt[0].value == hdr.opt[1].value) ? 8w1 : 8w0;
            hdr.report.ne01 = (hdr.opt[0].value != hdr.opt[1].value) ? 8w1 : 8w0;
        } else {
            hdr.report.eq01 = 0xFF;
            hdr.report.ne01 = 0xFF;
        }
        if (hdr.opt[0].isValid() && hdr.opt[2].isValid()) {
            hdr.report.heq02 = (hdr.opt[0] == hdr.opt[2]) ? 8w1 : 8w0;
        } else {
            hdr.report.heq02 = 0xFF;
        }
        hdr.report.last_kind = meta.last_kind;
        hdr.report.last_index = meta.last_index;
        if (std_meta.parser_error == error.NoError) {
            hdr.report.parser_error = 0;
            std_meta.egress_spec = 1;
        } else {
            if (std_meta.parser_error == error.StackOutOfBounds) {
                hdr.report.parser_error = 3;
            } else if (std_meta.parser_error == error.HeaderTooShort) {
                hdr.report.parser_error = 4;
            } else if (std_meta.parser_error == error.PacketTooShort) {
                hdr.report.parser_error = 1;
            } else {
                hdr.report.parser_error = 0xff;
            }
            std_meta.egress_spec = 2;
        }
    }
}

control EgressImpl(inout headers_t hdr,
                   inout metadata_t meta,
                   inout standard_metadata_t std_meta) {
    apply { }
}

control ComputeChecksumImpl(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control DeparserImpl(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.opt);
        pkt.emit(hdr.report);
    }
}

V1Switch(ParserImpl(), VerifyChecksumImpl(), IngressImpl(), EgressImpl(),
         ComputeChecksumImpl(), DeparserImpl()) main;
