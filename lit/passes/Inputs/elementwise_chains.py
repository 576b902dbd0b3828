"""Writes the MLIR of lit/passes/chain_barriers.mlir: chains of elementwise TOSA ops too long to
write out by hand. @long: one chain of 600 tanh ops. @broken: 200 tanh ops, a reduction (not
elementwise: it ends the chain), 200 more. @joined: chains of 200 and 100 ops meeting in an add,
then 60 more (a chain's length is its longest path)."""
V = "tensor<64xf32>"
S = "tensor<1xf32>"


def chain(lines, name, n, first, t):
    """n tanh ops of type t after value `first`, named %<name>1..; returns the last value."""
    value = first
    for i in range(1, n + 1):
        lines.append(f"  %{name}{i} = tosa.tanh {value} : ({t}) -> {t}")
        value = f"%{name}{i}"
    return value


def main():
    out = [f"func.func @long(%x: {V}) -> {V} {{"]
    out += [f"  return {chain(out, 'a', 600, '%x', V)} : {V}", "}", ""]
    out.append(f"func.func @broken(%x: {V}) -> {S} {{")
    a = chain(out, "a", 200, "%x", V)
    out.append(f'  %r = "tosa.reduce_sum"({a}) <{{axis = 0 : i32}}> : ({V}) -> {S}')
    out += [f"  return {chain(out, 'b', 200, '%r', S)} : {S}", "}", ""]
    out.append(f"func.func @joined(%x: {V}, %y: {V}) -> {V} {{")
    a = chain(out, "a", 200, "%x", V)
    b = chain(out, "b", 100, "%y", V)
    out.append(f"  %s = tosa.add {a}, {b} : ({V}, {V}) -> {V}")
    out += [f"  return {chain(out, 'c', 60, '%s', V)} : {V}", "}"]
    print("\n".join(out))


main()
