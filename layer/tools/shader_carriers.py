#!/usr/bin/env python3
"""Prints every structure and command of the Vulkan registry that can hand shader code to the
driver, one name per line (layer/tests/shader_carriers.rs compares them with the layer's
shader_hooks::carriers::CARRIERS).

A structure carries shader code when it has a `pCode` member or a VkPipelineShaderStageCreateInfo
member, when one of its members is a carrier (by value or pointer), or when a carrier may extend
it in its pNext chain (`structextends`). A command carries when one of its parameters is a
carrier. Source: the pinned `vulkan-object` package (packaging/install-deps.sh).
"""
from vulkan_object import get_vulkan_object


def carriers(vk):
    found = {n for n, s in vk.structs.items() if any(m.name == 'pCode' or m.type == 'VkPipelineShaderStageCreateInfo' for m in s.members)}
    changed = True
    while changed:
        changed = False
        for n, s in vk.structs.items():
            if n in found:
                continue
            if any(m.type in found for m in s.members) or any(e in found for e in (s.extendedBy or [])):
                found.add(n)
                changed = True
    commands = {c for c, cmd in vk.commands.items() if any(p.type in found for p in cmd.params)}
    return sorted(found) + sorted(commands)


if __name__ == '__main__':
    for name in carriers(get_vulkan_object()):
        print(name)
