/*
 * union_stack.p4 -- a stack of header unions.
 *
 * What it does
 *   Frames of EtherType 0x88B6 carry up to three items; the first byte of an
 *   item says which member it is: 1 = short item (tag, 8-bit value), 2 = long
 *   item (tag, 16-bit value, 8-bit flags); 0 ends the list. The parser
 *   extracts each item into a member of `hdr.items.next` (a stack of unions).
 *   Ingress writes a `summary` header: the number of items, which member of
 *   each of the three elements is valid (0 none, 1 short, 2 long), the sum of
 *   the values, and which union elements hold a member. A frame whose
 *   element 1 is a long item with flags 0xFF is turned around: element 1's
 *   member is switched (setValid on the other member) before emitting.
 *   Egress port: 1, or 2 after a parser error (StackOutOfBounds).
 *
 * P4 / v1model features exercised
 *   - header_union stacks: extract(hdr.items.next.member) in a parser loop
 *   - isValid() of the members of union elements, indexed by constants (not
 *     of the elements themselves: p4c emits `hdr.items[0].isValid()` as a
 *     `valid_union` over a "header" named items[0], which bmv2 refuses)
 *   - setValid on a member of a union element invalidates the other member
 *   - emit of a stack of unions (valid members in element order)
 */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

header short_t {
    bit<8> tag;
    bit<8> value;
}

header long_t {
    bit<8>  tag;
    bit<16> value;
    bit<8>  flags;
}

header_union item_u {
    short_t s;
    long_t  l;
}

header summary_t {
    bit<8>  count;
    bit<8>  kind0;
    bit<8>  kind1;
    bit<8>  kind2;
    bit<16> sum;
    bit<8>  valid_elems;
}

struct headers_t {
    ethernet_t ethernet;
    item_u[3]  items;
    summary_t  summary;
}

struct metadata_t {
    bit<8> count;
}

parser ParserImpl(packet_in pkt,
                  out headers_t hdr,
                  inout metadata_t meta,
                  inout standard_metadata_t std_meta) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            0x88B6: parse_item;
            default: accept;
        }
    }
    state parse_item {
        transition select(pkt.lookahead<bit<8>>()) {
            1: parse_short;
            2: parse_long;
            default: accept;
        }
    }
    state parse_short {
        pkt.extract(hdr.items.next.s);
        meta.count = meta.count + 1;
        transition parse_item;
    }
    state parse_long {
        pkt.extract(hdr.items.next.l);
        meta.count = meta.count + 1;
        transition parse_item;
    }
}

control VerifyChecksumImpl(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control IngressImpl(inout headers_t hdr,
                    inout metadata_t meta,
                    inout standard_metadata_t std_meta) {
    apply {
        hdr.summary.setValid();
        hdr.summary.count = meta.count;
        hdr.summary.sum = 0;
        if (hdr.items[0].s.isValid()) {
            hdr.summary.kind0 = 1;
            hdr.summary.sum = hdr.summary.sum + (bit<16>)hdr.items[0].s.value;
        } else if (hdr.items[0].l.isValid()) {
            hdr.summary.kind0 = 2;
            hdr.summary.sum = hdr.summary.sum + hdr.items[0].l.value;
        }
        if (hdr.items[1].s.isValid()) {
            hdr.summary.kind1 = 1;
            hdr.summary.sum = hdr.summary.sum + (bit<16>)hdr.items[1].s.value;
        } else if (hdr.items[1].l.isValid()) {
            hdr.summary.kind1 = 2;
            hdr.summary.sum = hdr.summary.sum + hdr.items[1].l.value;
        }
        if (hdr.items[2].s.isValid()) {
            hdr.summary.kind2 = 1;
            hdr.summary.sum = hdr.summary.sum + (bit<16>)hdr.items[2].s.value;
        } else if (hdr.items[2].l.isValid()) {
            hdr.summary.kind2 = 2;
            hdr.summary.sum = hdr.summary.sum + hdr.items[2].l.value;
        }
        // valid_elems: bit i set when element i holds a member (p4c writes
        // hdr.items[i].isValid() as a `valid_union` of a "header" named
        // items[i], which bmv2 refuses to load: the members are tested instead)
        hdr.summary.valid_elems = 0;
        if (hdr.items[0].s.isValid() || hdr.items[0].l.isValid()) {
            hdr.summary.valid_elems = hdr.summary.valid_elems | 1;
        }
        if (hdr.items[1].s.isValid() || hdr.items[1].l.isValid()) {
            hdr.summary.valid_elems = hdr.summary.valid_elems | 2;
        }
        if (hdr.items[2].s.isValid() || hdr.items[2].l.isValid()) {
            hdr.summary.valid_elems = hdr.summary.valid_elems | 4;
        }
        if (hdr.items[1].l.isValid() && hdr.items[1].l.flags == 0xFF) {
            hdr.items[1].s.setValid();
            hdr.items[1].s.tag = 1;
            hdr.items[1].s.value = 0xEE;
        }
        if (std_meta.parser_error == error.NoError) {
            std_meta.egress_spec = 1;
        } else {
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
        pkt.emit(hdr.items);
        pkt.emit(hdr.summary);
    }
}

V1Switch(ParserImpl(), VerifyChecksumImpl(), IngressImpl(), EgressImpl(),
         ComputeChecksumImpl(), DeparserImpl()) main;
