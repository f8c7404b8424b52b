"""Sources of the round-68 public programs (tests/api/test_public_programs_round68.py and
tests/compile/test_public_patterns_round68.py), executed with ``torch`` bound to torch or
tracegrad by ``program(T, SRC)``. Kept as in their repositories apart from the ``import`` lines
(the names are given as globals) and the changes noted in place; see the test files for the
repositories, paths, commits and licenses."""
import public_programs_round67_src as _r67

module = _r67.module


def program(T, src, **extra):
    """Execute a program source with round 67's globals (``torch``, ``nn``, ``F``, ``optim``,
    ``np``, ``math``, ``copy``, ``time``, ``Variable``, ``DataLoader``, ...)."""
    return _r67.program(T, src, **extra)


# LoniQin/pytorch-style-transfer (no license file) at cb48fc3: utils.py, Normalization.py,
# ContentLoss.py and StyleLoss.py, in that order, but for their imports
STYLE_PARTS = r'''
def get_current_device():
    use_coda = torch.cuda.is_available()
    device = torch.device('cuda' if use_coda else 'cpu')
    return device

class Normalization(nn.Module):

    def __init__(self, mean, std):
        super(Normalization, self).__init__()
        self.mean = torch.tensor(mean).view(-1, 1, 1)
        self.std = torch.tensor(std).view(-1, 1, 1)

    def forward(self, img):
        return (img - self.mean) / self.std

class ContentLoss(nn.Module):

    def __init__(self, target):
        super(ContentLoss, self).__init__()
        self.target = target.detach()

    def forward(self, input):
        self.loss = F.mse_loss(input, self.target)
        return input

class StyleLoss(nn.Module):
    def __init__(self, target):
        super(StyleLoss, self).__init__()
        self.target = self.gram_matrix(target).detach()

    def forward(self, input):
        G = self.gram_matrix(input=input)
        self.loss = F.mse_loss(G, self.target)
        return input

    def gram_matrix(self, input):
        a, b, c, d = input.size()
        features = input.view(a * b, c * d)
        G = torch.mm(features, features.t())
        return G.div(a * b * c * d)
'''

# LoniQin/pytorch-style-transfer StyleTransfer.py at d5ab795, but for its imports and its
# ``__main__`` block (``transforms``, ``models``, ``plt``, ``ImageLoader`` and ``copy`` are
# globals the tests give: torchvision, matplotlib and PIL are not installed, and the images are
# tensors the tests make)
STYLE_TRANSFER = r'''
class StyleTransfer(object):
    def __init__(self,
                 size,
                 style_path,
                 content_path,
                 save_path = None,
                 device = None,
                 content_layers = ['conv_4'],
                 style_layers = ['conv_1', 'conv_2', 'conv_3', 'conv_4', 'conv_5'],
                 step_count = 300,
                 style_weight = 1000000,
                 content_weight = 1,
                 transform_model = None):
        self.device = device
        if self.device == None:
            self.device = get_current_device()
        self.size = size
        self.style_path = style_path
        self.content_path = content_path
        self.loader = transforms.Compose([
            transforms.Resize(self.size),
            transforms.ToTensor()
        ])
        self.content_layers = content_layers
        self.style_layers = style_layers
        self.step_count = step_count
        self.style_weight = style_weight
        self.content_weight = content_weight
        self.save_path = save_path
        self.step = 0
        self.transform_model = transform_model
        if self.transform_model == None:
            self.transform_model = models.vgg19(pretrained = True).features.to(self.device).eval()

    def load_image(self):
        self.style_image = ImageLoader(file_path = self.style_path, loader = self.loader, device = self.device)
        self.content_image = ImageLoader(file_path = self.content_path, loader = self.loader, device = self.device)
        assert self.style_image.image.size() == self.content_image.image.size(), "Style image and content image should have the same size"
        self.input_image = self.content_image.image.clone()

    def show_image(self, tensor, title = None):
        unloader = transforms.ToPILImage()
        image = tensor.cpu().clone()
        print("Before squeeze:", image.size())
        image = image.squeeze(0)
        print("After squeeze:", image.size())
        image = unloader(image)
        print("After unload: ", image.size)
        #plt.imshow(image)
        if title is not None:
            plt.title(title)
        plt.pause(3)

    def show_images(self):
        plt.figure()

        self.show_image(tensor = self.style_image.image, title = "Style Image")
        plt.figure()
        self.show_image(tensor = self.content_image.image, title = "Content Image")
        plt.figure()
        self.show_image(self.input_image, "Input Image")
        plt.show()

    def run(self):

        torch.autograd.set_detect_anomaly(True)
        normalization = Normalization([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]).to(self.device)
        content_losses = []
        style_losses = []
        model = nn.Sequential(normalization)
        i = 0
        transform_model = copy.deepcopy(self.transform_model)
        for layer in transform_model.children():
            if isinstance(layer, nn.Conv2d):
                i += 1
                name = 'conv_{}'.format(i)
            elif isinstance(layer, nn.ReLU):
                name = 'relu_{}'.format(i)
                layer = nn.ReLU(inplace=False)
            elif isinstance(layer, nn.MaxPool2d):
                name = 'pool_{}'.format(i)
            elif isinstance(layer, nn.BatchNorm2d):
                name = 'bn_{}'.format(i)
            else:
                raise RuntimeError('Unrecognized layer: {}'.format(layer.__class__.name))
            model.add_module(name, layer)

            if name in self.content_layers:
                target = model(self.content_image.image).detach()
                content_loss = ContentLoss(target)
                model.add_module("content_loss_{}".format(i), content_loss)
                content_losses.append(content_loss)
            if name in self.style_layers:
                target = model(self.style_image.image).detach()
                style_loss = StyleLoss(target)
                model.add_module("style_loss_{}".format(i), style_loss)
                style_losses.append(style_loss)

        for i in range(len(model) - 1, -1, -1):
            if isinstance(model[i], ContentLoss) or isinstance(model[i], StyleLoss):
                break
        model = model[:(i+1)]

        optimizer = optim.LBFGS([self.input_image.requires_grad_()])
        print('Optimizing..')
        self.step = 0
        while self.step <= self.step_count:
            def closure():
                self.input_image.data.clamp_(0, 1)
                optimizer.zero_grad()
                model(self.input_image)
                style_score = 0
                content_score = 0
                for item in style_losses:
                    style_score += item.loss
                for item in content_losses:
                    content_score += item.loss
                style_score *= self.style_weight
                content_score *= self.content_weight
                loss = style_score + content_score
                loss.backward()
                self.step += 1
                #print("run {}".format(self.step))
                if self.step % 50 == 0:
                    print("Style loss: {:4f} Content loss: {:4f}".format(style_score.item(), content_score.item()))
                return content_score + content_score
            optimizer.step(closure)
        self.input_image.data.clamp_(0, 1)

        if self.save_path != None:
            unloader = transforms.ToPILImage()
            image = self.input_image.cpu().clone()
            image = image.squeeze(0)
            image = unloader(image)
            image.save(self.save_path)
            print("Image saved to ", self.save_path)
'''

# singh-hrituraj/PixelCNN-Pytorch (no license file) MaskedCNN.py and Model.py at 69daf9f, in
# that order, but for their imports (tab-indented as in the repository)
PIXELCNN = r'''
class MaskedCNN(nn.Conv2d):
	"""
	Implementation of Masked CNN Class as explained in A Oord et. al. 
	Taken from https://github.com/jzbontar/pixelcnn-pytorch
	"""

	def __init__(self, mask_type, *args, **kwargs):
		self.mask_type = mask_type
		assert mask_type in ['A', 'B'], "Unknown Mask Type"
		super(MaskedCNN, self).__init__(*args, **kwargs)
		self.register_buffer('mask', self.weight.data.clone())

		_, depth, height, width = self.weight.size()
		self.mask.fill_(1)
		if mask_type =='A':
			self.mask[:,:,height//2,width//2:] = 0
			self.mask[:,:,height//2+1:,:] = 0
		else:
			self.mask[:,:,height//2,width//2+1:] = 0
			self.mask[:,:,height//2+1:,:] = 0


	def forward(self, x):
		self.weight.data*=self.mask
		return super(MaskedCNN, self).forward(x)

class PixelCNN(nn.Module):
	"""
	Network of PixelCNN as described in A Oord et. al. 
	"""
	def __init__(self, no_layers=8, kernel = 7, channels=64, device=None):
		super(PixelCNN, self).__init__()
		self.no_layers = no_layers
		self.kernel = kernel
		self.channels = channels
		self.layers = {}
		self.device = device

		self.Conv2d_1 = MaskedCNN('A',1,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_1 = nn.BatchNorm2d(channels)
		self.ReLU_1= nn.ReLU(True)

		self.Conv2d_2 = MaskedCNN('B',channels,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_2 = nn.BatchNorm2d(channels)
		self.ReLU_2= nn.ReLU(True)

		self.Conv2d_3 = MaskedCNN('B',channels,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_3 = nn.BatchNorm2d(channels)
		self.ReLU_3= nn.ReLU(True)

		self.Conv2d_4 = MaskedCNN('B',channels,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_4 = nn.BatchNorm2d(channels)
		self.ReLU_4= nn.ReLU(True)

		self.Conv2d_5 = MaskedCNN('B',channels,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_5 = nn.BatchNorm2d(channels)
		self.ReLU_5= nn.ReLU(True)

		self.Conv2d_6 = MaskedCNN('B',channels,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_6 = nn.BatchNorm2d(channels)
		self.ReLU_6= nn.ReLU(True)

		self.Conv2d_7 = MaskedCNN('B',channels,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_7 = nn.BatchNorm2d(channels)
		self.ReLU_7= nn.ReLU(True)

		self.Conv2d_8 = MaskedCNN('B',channels,channels, kernel, 1, kernel//2, bias=False)
		self.BatchNorm2d_8 = nn.BatchNorm2d(channels)
		self.ReLU_8= nn.ReLU(True)

		self.out = nn.Conv2d(channels, 256, 1)

	def forward(self, x):
		x = self.Conv2d_1(x)
		x = self.BatchNorm2d_1(x)
		x = self.ReLU_1(x)

		x = self.Conv2d_2(x)
		x = self.BatchNorm2d_2(x)
		x = self.ReLU_2(x)

		x = self.Conv2d_3(x)
		x = self.BatchNorm2d_3(x)
		x = self.ReLU_3(x)

		x = self.Conv2d_4(x)
		x = self.BatchNorm2d_4(x)
		x = self.ReLU_4(x)

		x = self.Conv2d_5(x)
		x = self.BatchNorm2d_5(x)
		x = self.ReLU_5(x)

		x = self.Conv2d_6(x)
		x = self.BatchNorm2d_6(x)
		x = self.ReLU_6(x)

		x = self.Conv2d_7(x)
		x = self.BatchNorm2d_7(x)
		x = self.ReLU_7(x)

		x = self.Conv2d_8(x)
		x = self.BatchNorm2d_8(x)
		x = self.ReLU_8(x)

		return self.out(x)
'''

# singh-hrituraj/PixelCNN-Pytorch train.py at 70f82d4: ``main``, whole (``parse_config`` and
# ``get_MNIST``, its utils.py's, are stand-ins the tests give with ``data``, ``os`` and
# ``print``: tiny synthetic images, a loader without shuffling or workers, a collected log)
PIXELCNN_TRAIN = r'''
def main(config_file):
	config = parse_config(config_file)
	data_ = config['data']
	network = config['network']

	path = data_.get('path', '/home/gnpillai/Hrituraj/Pixel-CNN/Data')
	data_name = data_.get('data_name','MNIST')
	batch_size = data_.get('batch_size', 144)

	layers = network.get('no_layers', 8)
	kernel = network.get('kernel', 7)
	channels = network.get('channels', 64)
	epochs = network.get('epochs', 25)
	save_path = network.get('save_path', '/home/gnpillai/Hrituraj/Pixel-CNN/Models')


	#Loading Data
	if (data_name=='MNIST'):
		train, test = get_MNIST(path)

	train = data.DataLoader(train, batch_size=batch_size, shuffle=True, num_workers =1, pin_memory = True)
	test = data.DataLoader(train, batch_size=batch_size, shuffle=False, num_workers =1, pin_memory = True)











	#Defining the model and training it on loss function
	device = torch.device("cuda:0" if torch.cuda.is_available() else "cpu")
	net = PixelCNN().to(device)
	if torch.cuda.device_count() > 1:
  		print("Let's use", torch.cuda.device_count(), "GPUs!")
  		net = nn.DataParallel(net)
	
	

	optimizer = optim.Adam(net.parameters())
	criterion = nn.CrossEntropyLoss()




	loss_overall = []
	time_start = time.time()
	print('Training Started')

	for i in range(epochs):

		
		net.train(True)
		step = 0
		loss_= 0

		for images, labels in train:
			
			target = Variable(images[:,0,:,:]*255).long()
			images = images.to(device)
			target = target.to(device)
			
			


			optimizer.zero_grad()

			output = net(images)
			loss = criterion(output, target)
			loss.backward()
			optimizer.step()


			loss_+=loss
			step+=1

			if(step%100 == 0):
				print('Epoch:'+str(i)+'\t'+ str(step) +'\t Iterations Complete \t'+'loss: ', loss.item()/1000.0)
				loss_overall.append(loss_/1000.0)
				loss_=0
		print('Epoch: '+str(i)+' Over!')

		#Saving the model
		if not os.path.exists(save_path):
			os.makedirs(save_path)
		print("Saving Checkpoint!")
		if(i==epochs-1):
			torch.save(net.state_dict(), save_path+'/Model_Checkpoint_'+'Last'+'.pt')
		else:
			torch.save(net.state_dict(), save_path+'/Model_Checkpoint_'+str(i)+'.pt')
		print('Checkpoint Saved')


	print('Training Finished! Time Taken: ', time.time()-time_start)
'''

# hiram36/makeMoE-1 (no license file) makeMoE.py at 78eba80, whole but for its imports
# (``init``, ``F`` and ``get_device`` are globals; the module reads ``input.txt`` from the
# working directory as the repository's does). The file has docstrings of both quote kinds:
# its three ``'''`` strings are written ``<Q3>`` here and put back by the ``replace``.
MAKEMOE = r'''
# hyperparameters
batch_size = 16 # how many independent sequences will we process in parallel?
block_size = 32 # what is the maximum context length for predictions?
max_iters = 450
eval_interval = 100
learning_rate = 1e-3
#device = 'cuda' if torch.cuda.is_available() else 'cpu'
device=get_device()
eval_iters = 400
head_size = 16
n_embed = 128
n_head = 8
n_layer = 8
dropout = 0.1
num_experts = 8 # This can be adjusted depending on the overall number of parameters
top_k = 2 # This controls the number of active parameters
train_ratio = 0.9

model_file_path = 'model/makemoe_9M_v1.pth'
train_file_path = 'input.txt'
torch.manual_seed(1337)

def get_train_data(file_path):
    with open(file_path, 'r', encoding='utf-8') as f:
        data = f.read()
    return data

text = get_train_data(train_file_path)

# here are all the unique characters that occur in this text
chars = sorted(list(set(text)))
vocab_size = len(chars)
# create a mapping from characters to integers
stoi = { ch:i for i,ch in enumerate(chars) }
itos = { i:ch for i,ch in enumerate(chars) }
encode = lambda s: [stoi[c] for c in s] # encoder: take a string, output a list of integers
decode = lambda l: ''.join([itos[i] for i in l]) # decoder: take a list of integers, output a string

# Train and test splits
data = torch.tensor(encode(text), dtype=torch.long)
n = int(train_ratio * len(data)) # first 90% will be train, rest val
train_data = data[:n]
val_data = data[n:]

# data loading
def get_batch(split):
    # generate a small batch of data of inputs x and targets y
    data = train_data if split == 'train' else val_data
    ix = torch.randint(len(data) - block_size, (batch_size,))
    x = torch.stack([data[i:i+block_size] for i in ix])
    y = torch.stack([data[i+1:i+block_size+1] for i in ix])
    x, y = x.to(device), y.to(device)
    return x, y

@torch.no_grad()
def estimate_loss(model):
    out = {}
    model.eval()
    for split in ['train', 'val']:
        losses = torch.zeros(eval_iters)
        for k in range(eval_iters):
            X, Y = get_batch(split)
            logits, loss = model(X, Y)
            losses[k] = loss.item()
        out[split] = losses.mean()
    model.train()
    return out

def save_model(model, model_file_path):
    torch.save(model, model_file_path)

class Head(nn.Module):
    """ one head of self-attention """

    def __init__(self, head_size):
        super().__init__()
        self.key = nn.Linear(n_embed, head_size, bias=False)
        self.query = nn.Linear(n_embed, head_size, bias=False)
        self.value = nn.Linear(n_embed, head_size, bias=False)
        self.register_buffer('tril', torch.tril(torch.ones(block_size, block_size)))
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        B,T,C = x.shape
        k = self.key(x)   # (B,T,C)
        q = self.query(x) # (B,T,C)
        # compute attention scores ("affinities")
        wei = q @ k.transpose(-2,-1) * C**-0.5 # (B, T, C) @ (B, C, T) -> (B, T, T)
        wei = wei.masked_fill(self.tril[:T, :T] == 0, float('-inf')) # (B, T, T)
        wei = F.softmax(wei, dim=-1).cpu().clone()   # (B, T, T)
        wei = self.dropout(wei)
        # perform the weighted aggregation of the values
        v = self.value(x).to(device) # (B,T,C)
        wei = wei.to(device)
        out = wei @ v # (B, T, T) @ (B, T, C) -> (B, T, C)
        return out

#Multi-Headed Self Attention
class MultiHeadAttention(nn.Module):
    """ multiple heads of self-attention in parallel """

    def __init__(self, num_heads, head_size):
        super().__init__()
        self.heads = nn.ModuleList([Head(head_size) for _ in range(num_heads)])
        self.proj = nn.Linear(n_embed, n_embed)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        out = torch.cat([h(x) for h in self.heads], dim=-1)
        out = self.dropout(self.proj(out))
        return out
    
#Expert module
class Expert(nn.Module):
    """ An MLP is a simple linear layer followed by a non-linearity i.e. each Expert """

    def __init__(self, n_embed):
        super().__init__()
        self.net = nn.Sequential(
            nn.Linear(n_embed, 4 * n_embed),
            nn.ReLU(inplace=False),
            nn.Linear(4 * n_embed, n_embed),
            nn.Dropout(dropout),
        )

    def forward(self, x):
        return self.net(x)

#noisy top-k gating
class NoisyTopkRouter(nn.Module):
    def __init__(self, n_embed, num_experts, top_k):
        super(NoisyTopkRouter, self).__init__()
        self.top_k = top_k
        #layer for router logits
        self.topkroute_linear = nn.Linear(n_embed, num_experts)
        self.noise_linear =nn.Linear(n_embed, num_experts)

    def forward(self, mh_output):
        # mh_ouput is the output tensor from multihead self attention block
        logits = self.topkroute_linear(mh_output)

        #Noise logits
        noise_logits = self.noise_linear(mh_output)

        #Adding scaled unit gaussian noise to the logits
        noise = torch.randn_like(logits)*F.softplus(noise_logits)
        noisy_logits = logits + noise

        top_k_logits, indices = noisy_logits.topk(self.top_k, dim=-1)
        zeros = torch.full_like(noisy_logits, float('-inf'))
        sparse_logits = zeros.scatter(-1, indices, top_k_logits)
        router_output = F.softmax(sparse_logits, dim=-1).cpu().clone()
        return router_output, indices

#Now create the sparse mixture of experts module
class SparseMoE(nn.Module):
    def __init__(self, n_embed, num_experts, top_k, capacity_factor=1.0):
        super(SparseMoE, self).__init__()
        self.router = NoisyTopkRouter(n_embed, num_experts, top_k)
        self.experts = nn.ModuleList([Expert(n_embed) for _ in range(num_experts)])
        self.top_k = top_k
        self.capacity_factor = capacity_factor
        self.num_experts = num_experts
    
    def forward(self, x):
    # Assuming x has shape [batch_size, seq_len, n_embd]
        batch_size, seq_len, _ = x.shape
        gating_output, indices = self.router(x)
        final_output = torch.zeros_like(x)

        # Flatten the batch and sequence dimensions to treat each token independently
        flat_x = x.view(-1, x.size(-1))  
        flat_gating_output = gating_output.view(-1, gating_output.size(-1)).to(device)

        tokens_per_batch = batch_size * seq_len * self.top_k
        expert_capacity = int((tokens_per_batch / self.num_experts) * self.capacity_factor)

        updates = torch.zeros_like(flat_x)

        for i, expert in enumerate(self.experts):
            expert_mask = (indices == i).any(dim=-1)
            flat_mask = expert_mask.view(-1)
            selected_indices = torch.nonzero(flat_mask).squeeze(-1)
            <Q3>
            张量标识了专家处理的第i个标记。
            如果分配给该专家的总标记数超过其容量，那么张量将被截断以匹配专家的最大处理能力。
            否则，它将被直接用于该专家下的计算。
            这些计算涉及通过专家确定每个标记的输出，然后应用相应的门控值来得出加权输出。
            这个加权输出被逐步地与最终输出张量结合。
            <Q3>
            limited_indices = selected_indices[:expert_capacity] if selected_indices.numel() > expert_capacity else selected_indices
            limited_indices = limited_indices.to(device=device)
            if limited_indices.numel() > 0:
                expert_input = flat_x[limited_indices]
                expert_output = expert(expert_input)
                gating_scores = flat_gating_output[limited_indices, i].unsqueeze(1)
                weighted_output = expert_output * gating_scores
                updates.index_add_(0, limited_indices, weighted_output)

        # Reshape updates to match the original dimensions of x
        final_output = final_output + updates.view(batch_size, seq_len, -1)

        return final_output

#First create a self attention + mixture of experts block, that may be repeated several number of times
#Copy pasting key architecture variables for clarity
class Block(nn.Module):
    """ Mixture of Experts Transformer block: communication followed by computation (multi-head self attention + SparseMoE) """

    def __init__(self, n_embed, n_head, num_experts, top_k):
        # n_embed: embedding dimension, n_head: the number of heads we'd like
        super().__init__()
        head_size = n_embed // n_head
        self.sa = MultiHeadAttention(n_head, head_size)
        self.smoe = SparseMoE(n_embed, num_experts, top_k)
        self.ln1 = nn.LayerNorm(n_embed)
        self.ln2 = nn.LayerNorm(n_embed)

    def forward(self, x):
        x = x + self.sa(self.ln1(x))
        x = x + self.smoe(self.ln2(x))
        return x
      
#Finally putting it all together to crease a sparse mixture of experts language model
class SparseMoELanguageModel(nn.Module):

    def __init__(self):
        super().__init__()
        # each token directly reads off the logits for the next token from a lookup table
        self.token_embedding_table = nn.Embedding(vocab_size, n_embed)
        self.position_embedding_table = nn.Embedding(block_size, n_embed)
        self.blocks = nn.Sequential(*[Block(n_embed, n_head=n_head, num_experts=num_experts,top_k=top_k) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embed) # final layer norm
        self.lm_head = nn.Linear(n_embed, vocab_size)

    def forward(self, idx, targets=None):
        B, T = idx.shape

        # idx and targets are both (B,T) tensor of integers
        tok_emb = self.token_embedding_table(idx).to(device) # (B,T,C)
        pos_emb = self.position_embedding_table(torch.arange(T, device=device)) # (T,C)
        #pos_emb = self.position_embedding_table(torch.arange(T)) # (T,C)

        x = tok_emb + pos_emb # (B,T,C)
        x = self.blocks(x) # (B,T,C)
        x = self.ln_f(x) # (B,T,C)
        logits = self.lm_head(x) # (B,T,vocab_size)

        if targets is None:
            loss = None
        else:
            B, T, C = logits.shape
            logits = logits.view(B*T, C)
            targets = targets.view(B*T)
            loss = F.cross_entropy(logits, targets)

        return logits, loss

    def generate(self, idx, max_new_tokens):
        # idx is (B, T) array of indices in the current context
        for _ in range(max_new_tokens):
            # crop idx to the last block_size tokens
            idx_cond = idx[:, -block_size:]
            # get the predictions
            logits, loss = self(idx_cond)
            # focus only on the last time step
            logits = logits[:, -1, :] # becomes (B, C)
            # apply softmax to get probabilities
            probs = F.softmax(logits, dim=-1).cpu().clone() # (B, C)
            # sample from the distribution
            idx_next = torch.multinomial(probs, num_samples=1) # (B, 1)
            # append sampled index to the running sequence
            idx = torch.cat((idx, idx_next), dim=1) # (B, T+1)
        return idx
      
<Q3>
kaiming 和 relu 适配 
<Q3>
def kaiming_init_weights(m):
    if isinstance (m, (nn.Linear)):
        init.kaiming_normal_(m.weight)

<Q3>
xavier glorot 和 tanh 适配 
<Q3>
def glorot_init_weights(m):
    if isinstance (m, (nn.Linear)):
        init.xavier_normal_(m.weight)

def get_model_parameters_numel(model):
    total_params = 0
    for name, param in model.named_parameters():
        each_param_numel = param.numel()
        total_params = total_params + each_param_numel
        print(f'{name} {each_param_numel}')
    return total_params

def main():
    model = SparseMoELanguageModel()
    model.apply(kaiming_init_weights)
    #model.apply(glorot_init_weights)
    model = model.to(device)
    total_params = get_model_parameters_numel(model=model)
    print(f'model parameters: {total_params}')

    print(sum(p.numel() for p in model.parameters()) / 1e6, 'M parameters')
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)

    m = model.to(device)
    # print the number of parameters in the model
    print(sum(p.numel() for p in m.parameters())/1e6, 'M parameters')

    # create a PyTorch optimizer
    optimizer = torch.optim.AdamW(model.parameters(), lr=learning_rate)

    for iter in range(max_iters):
        # every once in a while evaluate the loss on train and val sets
        if iter % eval_interval == 0 or iter == max_iters - 1:
            losses = estimate_loss(model)
            print(f"step {iter}: train loss {losses['train']:.4f}, val loss {losses['val']:.4f}")

        # sample a batch of data
        xb, yb = get_batch('train')
        xb = xb.to(device=device)
        yb = yb.to(device=device)
        # evaluate the loss
        logits, loss = model(xb, yb)
        with torch.autograd.set_detect_anomaly(True):
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()

    save_model(model=model, model_file_path=model_file_path)


def demo():
    model = SparseMoELanguageModel()
    model.apply(kaiming_init_weights)
    model = model.to(device)
    # sample a batch of data
    xb, yb = get_batch('train')
    x = xb[:3, :]
    y = yb[:3, :]
    print(x.shape)
    print(y.shape)
    x.to(device)
    y.to(device)

    logits, loss = model(x, y)
    
    print(f'logits.shape===> {logits.shape}')
    print(f'logits===> {logits}')
    print(f'loss.shape===> {loss.shape}')
    print(f'loss===> {loss}')



if __name__ == "__main__":
    #main()
    demo()
'''.replace("<Q3>", "'" * 3)
